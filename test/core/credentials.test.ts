import { describe, expect, it } from "vitest";
import {
  encodeCredentialsString,
  decodeCredentialsString,
  credentialsText,
  CredentialsStringError,
} from "../../core/credentials";

/** Worked by hand with Python 3: base64.b64encode(repr({'clientId': id, 'clientSecret': secret}).encode()).decode() + '==' */
const EXAMPLES: { clientId: string; clientSecret: string; text: string; encoded: string }[] = [
  {
    clientId: "abc",
    clientSecret: "s3cr3t",
    text: "{'clientId': 'abc', 'clientSecret': 's3cr3t'}",
    encoded: "eydjbGllbnRJZCc6ICdhYmMnLCAnY2xpZW50U2VjcmV0JzogJ3MzY3IzdCd9==",
  },
  {
    // a single quote switches Python to double quotes; a backslash is doubled
    clientId: "o'neil",
    clientSecret: "back\\slash",
    text: `{'clientId': "o'neil", 'clientSecret': 'back\\\\slash'}`,
    encoded: "eydjbGllbnRJZCc6ICJvJ25laWwiLCAnY2xpZW50U2VjcmV0JzogJ2JhY2tcXHNsYXNoJ30===",
  },
  {
    // both quote kinds: single quotes, the single one escaped
    clientId: "x",
    clientSecret: `a"b'c`,
    text: `{'clientId': 'x', 'clientSecret': 'a"b\\'c'}`,
    encoded: "eydjbGllbnRJZCc6ICd4JywgJ2NsaWVudFNlY3JldCc6ICdhImJcJ2MnfQ====",
  },
  {
    // non-ASCII is written as it is, UTF-8 encoded
    clientId: "üñî",
    clientSecret: "日本é",
    text: "{'clientId': 'üñî', 'clientSecret': '日本é'}",
    encoded: "eydjbGllbnRJZCc6ICfDvMOxw64nLCAnY2xpZW50U2VjcmV0JzogJ+aXpeacrMOpJ30===",
  },
  {
    // control characters are escaped
    clientId: "a",
    clientSecret: "\n\t\u0007",
    text: "{'clientId': 'a', 'clientSecret': '\\n\\t\\x07'}",
    encoded: "eydjbGllbnRJZCc6ICdhJywgJ2NsaWVudFNlY3JldCc6ICdcblx0XHgwNyd9==",
  },
];

describe("credentials string", () => {
  it.each(EXAMPLES)(
    "encodes $clientId / $clientSecret as Python would",
    ({ clientId, clientSecret, text, encoded }) => {
      expect(credentialsText({ clientId, clientSecret })).toBe(text);
      expect(encodeCredentialsString({ clientId, clientSecret })).toBe(encoded);
    },
  );

  it.each(EXAMPLES)("decodes back to $clientId", ({ clientId, clientSecret, encoded }) => {
    expect(decodeCredentialsString(encoded)).toEqual({ clientId, clientSecret });
  });

  it("appends == even when the Base64 already ends in padding", () => {
    const padded = EXAMPLES[2].encoded;
    expect(padded.endsWith("====")).toBe(true);
    expect(Buffer.from(padded.slice(0, -2), "base64").toString()).toBe(EXAMPLES[2].text);
  });

  it("rejects strings without the suffix, non-Base64 and malformed text, without quoting them", () => {
    const bad = [
      "eydjbGllbnRJZCc6ICdhYmMnLCAnY2xpZW50U2VjcmV0JzogJ3MzY3IzdCd9",
      "not base64!==",
      Buffer.from("{'clientId': 'a'}").toString("base64") + "==",
      Buffer.from("{'user': 'a', 'pass': 'b'}").toString("base64") + "==",
    ];
    for (const value of bad) {
      let error: Error | undefined;
      try {
        decodeCredentialsString(value);
      } catch (err) {
        error = err as Error;
      }
      expect(error).toBeInstanceOf(CredentialsStringError);
      expect(error!.message).not.toContain(value);
    }
  });

  it("round-trips random strings", () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = "aZ09'\"\\ \n\té日🙂=+/{}:,";
    for (let n = 0; n < 200; n++) {
      const s = () =>
        Array.from(
          { length: 1 + Math.floor(rand() * 12) },
          () => [...alphabet][Math.floor(rand() * [...alphabet].length)],
        ).join("");
      const creds = { clientId: s(), clientSecret: s() };
      expect(decodeCredentialsString(encodeCredentialsString(creds))).toEqual(creds);
    }
  });
});
