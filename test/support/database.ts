/** A fresh database per test file on the run's one embedded server. */
import { inject } from "vitest";
import { Client } from "pg";
import crypto from "node:crypto";

export async function createTestDatabase(prefix = "t"): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const adminUrl = inject("pgAdminUrl");
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

/**
 * Waits until no session of pg_stat_activity matches `where` (a condition with parameters `params`), up to `ms`:
 * a session whose client has gone may still be running, and committing, its last statement.
 */
export async function sessionsGone(db: Pick<Client, "query">, where: string, params: unknown[] = [], ms = 5000): Promise<void> {
  for (const started = Date.now(); Date.now() - started < ms; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${where}`, params);
    if (rows[0].n === 0) return;
  }
  throw new Error(`sessions matching ${where} did not end within ${ms} ms`);
}
