/**
 * Malformed input is a one-line refusal, never an internal error: a malformed %-escape in `--database-url` (exit 2,
 * naming the part, never the value: it may be the password) or in a local connection record (exit 1, naming the
 * file); an id given as 100,000 characters is echoed cut, with its length.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../support/cli";
import { exportFixture, statusOf, type ExportFixture } from "../support/exportFixture";
import { fixtureStackFile } from "../fixtures/stacks";
import { localDatabaseUrl } from "../../local/database";
import { UserError } from "../../core/errors";

const SECRET = "Zx9-url-secret";

/** The one line of stderr, with no stack trace and nothing of the secret. */
function oneLine(r: CliResult): string {
  expect(r.stderr + r.stdout).not.toContain(SECRET);
  expect(r.stderr).not.toMatch(/internal error|URIError|at .*\.[jt]s:\d+/);
  const lines = r.stderr.split("\n").filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  return lines[0];
}

describe("--database-url with a malformed %-escape", () => {
  const urls = {
    password: `postgres://hub_export:${SECRET}%E0@127.0.0.1:1/PLATDB`,
    user: `postgres://hub%E0_export:${SECRET}@127.0.0.1:1/PLATDB`,
    database: `postgres://hub_export:${SECRET}@127.0.0.1:1/PLAT%E0DB`,
  };
  const messageId = "9f0c6a4e-1d2b-4c3a-8e7f-000000000012";
  const commands: Record<string, string[]> = {
    status: [],
    retry: ["--message-id", messageId],
    discard: ["--message-id", messageId],
    reload: ["--tenant", "ACME_US_QA"],
  };

  it.each(
    Object.entries(commands).flatMap(([command, args]) => Object.keys(urls).map((part) => [command, part, args])),
  )("%s, in its %s: exit 2, one line naming the part", async (command, part, args) => {
    const r = await runCli([
      command as string,
      "--file",
      fixtureStackFile("qa"),
      "--database-url",
      urls[part as keyof typeof urls],
      ...(args as string[]),
    ]);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toBe(
      `hub-export ${command as string}: --database-url has a malformed %-escape in its ${part as string} (a % must be followed by two hex digits of UTF-8, %25 for % itself) (see 'hub-export ${command as string} --help')`,
    );
  });
});

describe("a local connection record with a URL that cannot be used", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "malformed-record-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([
    ["not a URL", "postgres://[127.0.0.1/PLATDB"],
    ["a malformed %-escape in its database name", "postgres://127.0.0.1:5432/PLAT%E0DB"],
  ])("%s: refused naming the file, without the password", (_what, url) => {
    const file = path.join(dir, "PLAT_WAREHOUSE_LOCAL.json");
    fs.writeFileSync(file, JSON.stringify({ type: "PostgreSQL", url, username: "hub_export", password: SECRET }));
    let error: unknown;
    try {
      localDatabaseUrl(dir, 5432);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toBe(
      `${file}: its url is not a postgres:// URL with a well-formed database name; correct it, or 'npm start' writes it again`,
    );
  });
});

describe("a long id is echoed cut", () => {
  const long = "x".repeat(100_000);
  let f: ExportFixture;
  beforeAll(async () => {
    f = await exportFixture();
  });
  afterAll(async () => f?.close());

  it.each(["retry", "discard"])(
    "%s --message-id of 100,000 characters: exit 2, its first 80 and its length",
    async (command) => {
      const r = await runCli([
        command,
        "--file",
        fixtureStackFile("qa"),
        "--database-url",
        f.db.url,
        "--message-id",
        long,
      ]);
      expect(r.code).toBe(2);
      expect(oneLine(r)).toBe(
        `hub-export ${command}: --message-id must be a messageId (a UUID), got '${"x".repeat(80)}... (100,000 characters)' (see 'hub-export ${command} --help')`,
      );
    },
  );

  it("status --job-name of 100,000 characters: exit 1, its first 80 and its length", async () => {
    const r = await statusOf(f, "--job-name", long);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^no job ${"x".repeat(80)}\\.\\.\\. \\(100,000 characters\\) in \\w+[:;] `));
    expect(r.stderr.length + r.stdout.length).toBeLessThan(2_000);
  });
});
