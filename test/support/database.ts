/** A fresh database per test file on the run's one embedded server. */
import { inject } from "vitest";
import { Client, type Pool } from "pg";
import crypto from "node:crypto";
import { ensurePlatformRoles, loginUrl } from "../../local/warehouseDba";
import { PLATFORM_ROLES } from "../../bench/platformRoles";

/** Servers of a test's own whose platform roles exist (the run's server gets them in platformSetup.ts). */
const withRoles = new Set<string>();

/**
 * A fresh database on the run's embedded server, or on the server of `superuserUrl` (a test's own), owned by the
 * platform's owner role as a warehouse is. `url` is the superuser's (the DBA's: databases, sessions, test data);
 * `adminUrl` the admin login's (PLATFORM_ROLES.admin), which provisions once the DBA stand-in has granted it its
 * prerequisites (bench/platform.ts provisionPlatform, local/warehouseDba.ts standInForDba).
 */
export async function createTestDatabase(
  prefix = "t",
  superuserUrl: string = inject("pgAdminUrl"),
): Promise<{ url: string; adminUrl: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${crypto.randomBytes(5).toString("hex")}`.toLowerCase();
  if (superuserUrl !== inject("pgAdminUrl") && !withRoles.has(superuserUrl)) {
    await ensurePlatformRoles(superuserUrl, PLATFORM_ROLES);
    withRoles.add(superuserUrl);
  }
  const admin = new Client({ connectionString: superuserUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} OWNER ${PLATFORM_ROLES.owner}`);
  await admin.end();
  const url = new URL(superuserUrl);
  url.pathname = "/" + name;
  return {
    url: url.toString(),
    adminUrl: loginUrl(superuserUrl, name, PLATFORM_ROLES.admin),
    name,
    async drop() {
      const c = new Client({ connectionString: superuserUrl });
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
