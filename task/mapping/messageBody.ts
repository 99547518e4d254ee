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
