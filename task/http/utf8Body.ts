/**
 * A request body written straight from its pieces into one Buffer. Joining message bodies into one string first
 * would copy every body twice more on the heap (the joined string, then its UTF-8 encoding inside undici); a Buffer
 * is sent as it is, by every retry, and lives off the heap while the request is in flight.
 */
export function utf8Body(pieces: readonly string[]): Buffer {
  let size = 0;
  for (const piece of pieces) size += Buffer.byteLength(piece);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const piece of pieces) at += out.write(piece, at);
  return out;
}

/** `[a,b,...]` of JSON texts already encoded. */
export function jsonArrayBody(items: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [OPEN];
  items.forEach((item, i) => (i ? parts.push(COMMA, item) : parts.push(item)));
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

const OPEN = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]");
