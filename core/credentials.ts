/**
 * The hub credentials string (specification, "Authentication"; docs/hub-contract.md): the text `{'clientId': '<id>',
 * 'clientSecret': '<secret>'}` as Python's repr() writes a dict of two strings, Base64-encoded, and `==` appended,
 * always, even after padding. The decoder removes exactly those two characters.
 */
import { maskSecret } from "./redact";

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

const SUFFIX = "==";

/** Python's repr() of a str: single quotes unless the text holds a ' and no ", escapes as CPython does. */
export function pythonStringRepr(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp !== 0x20 && NON_PRINTABLE.test(ch)) out += escapeNonPrintable(cp);
    else out += ch;
  }
  return out + quote;
}

// Python's str.isprintable(): Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs (but the ASCII space) are escaped.
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
function escapeNonPrintable(cp: number): string {
  if (cp <= 0xff) return "\\x" + cp.toString(16).padStart(2, "0");
  if (cp <= 0xffff) return "\\u" + cp.toString(16).padStart(4, "0");
  return "\\U" + cp.toString(16).padStart(8, "0");
}

/** The single-quoted key/value text in braces that the credentials string encodes. */
export function credentialsText({ clientId, clientSecret }: ClientCredentials): string {
  return `{'clientId': ${pythonStringRepr(clientId)}, 'clientSecret': ${pythonStringRepr(clientSecret)}}`;
}

export function encodeCredentialsString(credentials: ClientCredentials): string {
  return Buffer.from(credentialsText(credentials), "utf8").toString("base64") + SUFFIX;
}

export class CredentialsStringError extends Error {}

/** Decodes a credentials string. Errors never quote the input, since it is a secret. */
export function decodeCredentialsString(value: string): ClientCredentials {
  if (!value.endsWith(SUFFIX)) throw new CredentialsStringError("credentials string must end with the appended '=='");
  const b64 = value.slice(0, -SUFFIX.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new CredentialsStringError("credentials string is not Base64 followed by '=='");
  }
  const text = Buffer.from(b64, "base64").toString("utf8");
  return parseCredentialsText(text);
}

/** Python's escapes: of one character, and with that many hex digits. */
const CHAR_ESCAPES: Record<string, string> = { "\\": "\\", "'": "'", '"': '"', n: "\n", r: "\r", t: "\t" };
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

/** Parses `{'clientId': <py str>, 'clientSecret': <py str>}` as written by credentialsText. */
function parseCredentialsText(text: string): ClientCredentials {
  let i = 0;
  const fail = (what: string): never => {
    throw new CredentialsStringError(`credentials text is malformed: expected ${what} at offset ${i}`);
  };
  const skipSpaces = () => {
    while (text[i] === " ") i++;
  };
  const expect = (s: string) => {
    skipSpaces();
    if (!text.startsWith(s, i)) fail(JSON.stringify(s));
    i += s.length;
  };
  const readString = (): string => {
    skipSpaces();
    const quote = text[i];
    if (quote !== "'" && quote !== '"') fail("a quoted string");
    i++;
    let out = "";
    for (;;) {
      if (i >= text.length) fail("a closing quote");
      const ch = text[i++];
      if (ch === quote) return out;
      if (ch !== "\\") {
        out += ch;
        continue;
      }
      const esc = text[i++];
      const hex = (n: number) => {
        const h = text.slice(i, i + n);
        if (!/^[0-9a-fA-F]+$/.test(h) || h.length !== n) fail(`${n} hex digits`);
        i += n;
        return String.fromCodePoint(parseInt(h, 16));
      };
      if (esc in CHAR_ESCAPES) out += CHAR_ESCAPES[esc];
      else if (esc in HEX_ESCAPES) out += hex(HEX_ESCAPES[esc]);
      else fail("a known escape");
    }
  };
  expect("{");
  const fields: Record<string, string> = {};
  for (let n = 0; n < 2; n++) {
    if (n > 0) expect(",");
    const key = readString();
    expect(":");
    fields[key] = readString();
  }
  expect("}");
  skipSpaces();
  if (i !== text.length) fail("the end of the text");
  if (fields.clientId === undefined || fields.clientSecret === undefined) {
    throw new CredentialsStringError("credentials text must hold the keys clientId and clientSecret");
  }
  return { clientId: fields.clientId, clientSecret: fields.clientSecret };
}

/**
 * Masks a credentials string in every text the process shows (core/redact.ts): the string as the Basic header carries
 * it, its Base64 part alone, and the client secret it decodes to.
 */
export function maskCredentialsString(value: string): void {
  maskSecret(value, value.endsWith(SUFFIX) ? value.slice(0, -SUFFIX.length) : undefined);
  try {
    maskSecret(decodeCredentialsString(value).clientSecret);
  } catch {
    // Not a credentials string: masked as it is.
  }
}
