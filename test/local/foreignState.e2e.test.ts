/**
 * A foreign state is the user's to fix, never "internal error (a bug)": exit 1 with one message that names the thing
 * and says what to do. A full disk at start (PostgreSQL cannot write: its postmaster.opts is /dev/full) says to free
 * space, never to remove the data folder; a platform that gave HUB_INTAKE_JOB an extra NOT NULL column without a
 * default stops the next install, naming the column and the fix, with nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { runCli } from "../support/cli";
import { startEmbeddedPostgres } from "../../local/embeddedPostgres";
import { databaseUrl } from "../../local/warehouseDba";
import { fixtureStackFile } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-foreign-"));
// Enterable by others, like a checkout in an ordinary folder (the server may run as the postgres user).
fs.chmodSync(dir, 0o711);
const state = path.join(dir, "state");
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs `sql` (its rows back) on the stack's database, the local server started for it and stopped after. */
async function onDatabase(database: string, sql: string): Promise<Record<string, unknown>[]> {
  const server = await startEmbeddedPostgres({ dataDir: path.join(state, "postgres"), persistent: true });
  const client = new Client({ connectionString: databaseUrl(server.adminUrl, database) });
  try {
    await client.connect();
    return (await client.query(sql)).rows;
  } finally {
    await client.end().catch(() => {});
    await server.stop();
  }
}

describe("a foreign state is a user error", () => {
  let database: string;
  let staging: string;
  beforeAll(async () => {
    const first = await runCli(
      ["local", "--file", fixtureStackFile("qa"), "--json", "--employees", "20", "--dir", state],
      { timeoutMs: 240_000 },
    );
    expect(first.code, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout);
    database = decodeURIComponent(new URL(summary.database.url).pathname.slice(1));
    staging = summary.database.stagingSchema;
  }, 300_000);

  it("a full disk at start: free space, never remove the PostgreSQL folder", async () => {
    // The server's first write at start fails as on a full disk.
    const opts = path.join(state, "postgres", "postmaster.opts");
    fs.rmSync(opts, { force: true });
    fs.symlinkSync("/dev/full", opts);
    try {
      const r = await runCli(["local", "--file", fixtureStackFile("qa"), "--dir", state], { timeoutMs: 180_000 });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/the disk is full: free space in \S+/);
      expect(r.stderr).not.toMatch(/remov|internal error/i);
      expect(fs.existsSync(path.join(state, "postgres", "PG_VERSION"))).toBe(true);
    } finally {
      fs.rmSync(opts, { force: true });
    }
  });

  it("an extra NOT NULL column without a default in HUB_INTAKE_JOB: the next install stops, naming the column and the fix; nothing changed", async () => {
    const table = `${staging}.hub_intake_job`;
    await onDatabase(
      database,
      `ALTER TABLE ${table} ADD COLUMN platform_batch text NOT NULL DEFAULT 'b1'; ALTER TABLE ${table} ALTER COLUMN platform_batch DROP DEFAULT`,
    );
    const count = `SELECT (SELECT count(*) FROM ${table})::int AS jobs, (SELECT count(*) FROM ${staging}.hub_export_run_history)::int AS history`;
    const [before] = await onDatabase(database, count);
    const r = await runCli(["local", "--file", fixtureStackFile("qa"), "--dir", state], { timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(r.stderr).toContain(
      `with NOT NULL columns that have no default and that this project never writes: ${table}.platform_batch.`,
    );
    expect(r.stderr).toContain("Give them a default or drop their NOT NULL by hand");
    expect(r.stderr).toContain("nothing was changed");
    // No run, and the table as the platform left it.
    expect(await onDatabase(database, count)).toEqual([before]);
    const [column] = await onDatabase(
      database,
      `SELECT attnotnull AS "notNull", atthasdef AS "hasDefault" FROM pg_attribute WHERE attrelid = '${table}'::regclass AND attname = 'platform_batch'`,
    );
    expect(column).toEqual({ notNull: true, hasDefault: false });
  });
});
