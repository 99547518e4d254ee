/** A fresh database per test file on the run's one embedded server. */
import { inject } from "vitest";
import { Client, type Pool } from "pg";
import crypto from "node:crypto";

/** A fresh database on the run's embedded server, or on the server of `adminUrl` (a test's own). */
export async function createTestDatabase(
  prefix = "t",
  adminUrl: string = inject("pgAdminUrl"),
): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${crypto.randomBytes(5).toString("hex")}`.toLowerCase();
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = "/" + name;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      try {
        // pg's pool.end() resolves before its sessions have closed: terminating one still closing (FORCE) would
        // surface in this process as an uncaught 57P01. So wait for them first (a bounded wait); FORCE then only
        // ends sessions of other processes, such as a task a test left running.
        await sessionsGone(c, "datname = $1 AND pid <> pg_backend_pid()", [name]).catch(() => {});
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Waits until no session of pg_stat_activity matches `where` (a condition with parameters `params`), up to `ms` (a
 * hang guard: a loaded machine can take seconds): a session whose client has gone may still be running, and
 * committing, its last statement.
 */
export async function sessionsGone(
  db: Pick<Client, "query">,
  where: string,
  params: unknown[] = [],
  ms = 30_000,
): Promise<void> {
  for (const started = Date.now(); Date.now() - started < ms; await sleep(50)) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${where}`,
      params,
    );
    if (rows[0].n === 0) return;
  }
  throw new Error(`sessions matching ${where} did not end within ${ms} ms`);
}

/** Waits until the export task's sessions (application_name hub-export) on this database have ended. */
export function taskSessionsGone(pool: Pick<Client, "query">): Promise<void> {
  return sessionsGone(pool, "datname = current_database() AND application_name = 'hub-export'");
}

/** Holds `table` with an ACCESS EXCLUSIVE lock until the returned function is called: statements on it wait. */
export async function holdTable(pool: Pool, table: string): Promise<() => Promise<void>> {
  const c = await pool.connect();
  await c.query("BEGIN");
  await c.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return async () => {
    await c.query("COMMIT");
    c.release();
  };
}
