/**
 * The layout of a stored message body, fixed by the extract so the ERS phase can cut the entities back out without
 * parsing JSON: `{"header":{...},"entities":[<entity>,<entity>,...]}`. The header is json_build_object output of
 * fixed keys and plain values, so the marker below occurs once, right before the entities.
 */
export const ENTITIES_MARKER = ',"entities":[';

/** The entities' JSON texts of a body, joined by commas (the inverse of the extract's layout). */
export function entitiesText(body: string): string {
  const at = body.indexOf(ENTITIES_MARKER);
  if (at < 0 || !body.endsWith("]}")) throw new Error("not a hub message body");
  return body.slice(at + ENTITIES_MARKER.length, -2);
}

/**
 * The entities' JSON texts one by one (`entitiesText` joins them with commas): a scan for the commas between top-level
 * objects, outside strings, without parsing or writing the JSON again.
 */
export function entityTexts(entities: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < entities.length; i++) {
    const c = entities.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 0) {
      out.push(entities.slice(start, i));
      start = i + 1;
    }
  }
  if (start < entities.length) out.push(entities.slice(start));
  return out;
}

/**
 * The header's transactionId, first in the header as json_build_object writes it: `{"header":{"transactionId" : "<id>"`.
 * A message carries the transaction id of the run that publishes it, so a message of an earlier transaction that a
 * later run publishes gets that run's id here, without parsing the body.
 */
const HEADER_TRANSACTION = /^\{"header":\{"transactionId" : "([0-9a-f-]{36})"/;

/** The body with `transactionId` in its header (the body itself when it carries that id already). */
export function withTransactionId(body: string, transactionId: string): string {
  const m = HEADER_TRANSACTION.exec(body);
  if (!m) throw new Error("not a hub message body");
  if (m[1] === transactionId) return body;
  const at = m[0].length - 37;
  return body.slice(0, at) + transactionId + body.slice(at + 36);
}
