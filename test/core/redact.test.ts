/** The one redaction function (core/redact.ts): every echoed secret masked, every control character escaped. */
import { describe, expect, it } from "vitest";
import { maskSecret, redact, redactDeep, redactLines, redactSecrets } from "../../core/redact";
import { encodeCredentialsString, maskCredentialsString } from "../../core/credentials";

describe("redact", () => {
  const clientSecret = "t3nant-S3cr3t!/+ x";
  const credentials = encodeCredentialsString({ clientId: "acme-us", clientSecret });
  const password = 'db-pa"ss\\word';
  const token = "eyJhbGciOi.bearer-token.value";
  maskCredentialsString(credentials);
  maskSecret(password, token, "abc", undefined);

  it("masks a credentials string, its Base64 part and the client secret it decodes to, in the forms they travel in", () => {
    const echoes = [
      `authorization: Basic ${credentials}`,
      `you sent ${credentials.slice(0, -2)}`,
      `clientSecret was ${clientSecret}`,
      `client_secret=${new URLSearchParams({ s: clientSecret }).toString().slice(2)}&grant_type=client_credentials`,
      `?secret=${encodeURIComponent(clientSecret)}`,
      JSON.stringify({ echo: `Basic ${credentials}`, secret: clientSecret }),
    ];
    for (const echo of echoes) {
      const shown = redact(echo);
      expect(shown, echo).toContain("[secret]");
      for (const form of [credentials, credentials.slice(0, -2), clientSecret, encodeURIComponent(clientSecret)])
        expect(shown).not.toContain(form);
    }
    expect(redact(`authorization: Basic ${credentials}`)).toBe("authorization: Basic [secret]");
  });

  it("masks passwords (inside JSON too) and bearer tokens; never a string too short to be one", () => {
    expect(redact(`password ${password}`)).toBe("password [secret]");
    expect(redact(JSON.stringify({ password }))).toBe('{"password":"[secret]"}');
    expect(redact(`authorization: bearer ${token}`)).toBe("authorization: bearer [secret]");
    expect(redact("abc abcd")).toBe("abc abcd");
  });

  it("escapes control characters: terminal escape sequences, C1, bidi overrides, line breaks", () => {
    const hostile = "\u001b]0;owned\u0007\u001b[2J\u001b[31mALERT\u001b[0m\r\nforged\u009b31m\u202egnp.exe\u2028x\ty";
    expect(redact(hostile)).toBe(
      "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mALERT\\x1b[0m\\x0d\\x0aforged\\x9b31m\\u202egnp.exe\\u2028x\\x09y",
    );
    expect(redact("plain text, ünïcödé and emoji 🎉")).toBe("plain text, ünïcödé and emoji 🎉");
    expect(redactLines("line one\u001b[2J\nline two")).toBe("line one\\x1b[2J\nline two");
  });

  it("redactDeep: every string of a log line's fields or a JSON column, keys too; numbers and dates stay", () => {
    const at = new Date("2026-11-22T03:00:00Z");
    expect(
      redactDeep({ reason: `Basic ${credentials}`, n: 3, at, list: ["\u001b[31m", { [`k${token}`]: null }] }),
    ).toEqual({ reason: "Basic [secret]", n: 3, at, list: ["\\x1b[31m", { "k[secret]": null }] });
  });

  it("redactSecrets: the given secrets only, for code that runs apart from the process's secrets", () => {
    expect(redactSecrets(`a ${clientSecret} b s3cond-secret \u001b`, ["s3cond-secret"])).toBe(
      `a ${clientSecret} b [secret] \\x1b`,
    );
  });
});
