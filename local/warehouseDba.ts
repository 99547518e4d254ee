/**
 * The platform's part of the warehouse, played by the embedded server's superuser for local mode, the test platform
 * and the benchmarks, so that provisioning meets the warehouse as RDS gives it: a database owned by a role of its own,
 * the publish schema and its tables owned by the HR loader, and an admin login like RDS's master user (LOGIN and
 * CREATEROLE, not a superuser, a member of none of those roles). The DBA then grants the admin exactly what
 * `probe --warehouse` prints, the probe's own statements, so every start proves they suffice.
 */
import type { Client } from "pg";
import { sqlIdent } from "../core/warehousePrerequisites";
import { UserError } from "../core/errors";
import { withPgClient } from "../providers/pg";
import { probeWarehouse, type ProbeScope } from "../operate/warehouseProbe";

/** The role that owns the embedded default's databases, as a platform's database has an owner of its own. */
export const PLATFORM_DATABASE_OWNER = "platform_db_owner";

export interface PlatformRoles {
  /** The database's owner: NOLOGIN. */
  owner: string;
  /** The admin login (hubExport:database.admin). */
  admin: { username: string; password: string };
  /** The roles that load the publish schema: NOLOGIN; the first owns it. */
  loaders: string[];
}

export interface DbaPlatform extends PlatformRoles {
  /** A superuser URL of the server (any database on it). */
  superuserUrl: string;
  database: string;
  /** What the admin's prerequisites depend on (core/warehousePrerequisites.ts). */
  scope: ProbeScope;
  /** Fills the publish schema as its loaders do, before the probe (superuser URL of the database). */
  fillPublish?: (superuserDatabaseUrl: string) => Promise<void>;
}

/** `url` with another database. */
export function databaseUrl(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = "/" + encodeURIComponent(database);
  return u.toString();
}

/** The admin login's URL of `database` on the superuser URL's server. */
export function loginUrl(superuserUrl: string, database: string, login: { username: string; password: string }) {
  const u = new URL(databaseUrl(superuserUrl, database));
  u.username = encodeURIComponent(login.username);
  u.password = encodeURIComponent(login.password);
  return u.toString();
}

/**
 * Serializes the DBA's work across processes (the test files of a run share one server): role memberships are the
 * cluster's, and two sessions granting the same one at once fail. Advisory locks are per database: taken in `postgres`.
 */
async function withDbaLock<T>(superuserUrl: string, fn: () => Promise<T>): Promise<T> {
  return withPgClient(databaseUrl(superuserUrl, "postgres"), async (lock) => {
    await lock.query("SELECT pg_advisory_lock(hashtext('hub_export_dba'))");
    try {
      return await fn();
    } finally {
      await lock.query("SELECT pg_advisory_unlock(hashtext('hub_export_dba'))").catch(() => undefined);
    }
  });
}

async function roleExists(client: Client, name: string): Promise<{ superuser: boolean } | undefined> {
  const { rows } = await client.query<{ rolsuper: boolean }>("SELECT rolsuper FROM pg_roles WHERE rolname = $1", [
    name,
  ]);
  return rows[0] ? { superuser: rows[0].rolsuper } : undefined;
}

/** Creates the cluster's roles where missing (idempotent); the admin gets its password again. */
export async function ensurePlatformRoles(superuserUrl: string, roles: PlatformRoles): Promise<void> {
  await withDbaLock(superuserUrl, () => createRoles(superuserUrl, roles));
}

async function createRoles(superuserUrl: string, roles: PlatformRoles): Promise<void> {
  await withPgClient(databaseUrl(superuserUrl, "postgres"), async (client) => {
    for (const name of [roles.owner, ...roles.loaders])
      if (!(await roleExists(client, name))) await client.query(`CREATE ROLE ${sqlIdent(name)} NOLOGIN`);
    const admin = await roleExists(client, roles.admin.username);
    if (admin?.superuser)
      throw new UserError(
        `the admin login ${roles.admin.username} (hubExport:database.admin.username) is a superuser of the embedded server: name another login, as RDS's master user is not one`,
      );
    // Passwords cannot be bound parameters in DDL; format() quotes the literal inside the server.
    const { rows } = await client.query<{ literal: string }>("SELECT format('%L', $1::text) AS literal", [
      roles.admin.password,
    ]);
    const attributes = `LOGIN CREATEROLE NOSUPERUSER NOCREATEDB INHERIT PASSWORD ${rows[0].literal}`;
    await client.query(`${admin ? "ALTER" : "CREATE"} ROLE ${sqlIdent(roles.admin.username)} WITH ${attributes}`);
    // RDS's master user sees every session's activity (rds_superuser has pg_read_all_stats): the run tables'
    // oldest-transaction function, which the admin owns, relies on it (task/README.md, "Change capture").
    await client.query(`GRANT pg_read_all_stats TO ${sqlIdent(roles.admin.username)}`);
  });
}

/**
 * The platform as its DBA leaves it for a first `pulumi up`, then the admin's prerequisites granted as the probe
 * prints them. Idempotent: a database, schema or table a superuser owns (an older state folder) goes to the role that
 * owns it on a platform. Returns the admin's URL of the database.
 */
export async function standInForDba(platform: DbaPlatform): Promise<string> {
  const { superuserUrl, database } = platform;
  const dbUrl = databaseUrl(superuserUrl, database);
  const publishOwner = platform.loaders[0] ?? platform.owner;
  return withDbaLock(superuserUrl, async () => {
    await createRoles(superuserUrl, platform);
    await withPgClient(databaseUrl(superuserUrl, "postgres"), async (client) => {
      const { rows } = await client.query<{ superuser: boolean }>(
        "SELECT r.rolsuper AS superuser FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE d.datname = $1",
        [database],
      );
      if (!rows[0]) await client.query(`CREATE DATABASE ${sqlIdent(database)} OWNER ${sqlIdent(platform.owner)}`);
      else if (rows[0].superuser)
        await client.query(`ALTER DATABASE ${sqlIdent(database)} OWNER TO ${sqlIdent(platform.owner)}`);
    });
    const publish = sqlIdent(platform.scope.publishSchema);
    await withPgClient(dbUrl, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${publish} AUTHORIZATION ${sqlIdent(publishOwner)}`);
      // What a superuser made here before (an older state folder, a test's own tables) is the loader's.
      const { rows } = await client.query<{ kind: string; name: string }>(
        `SELECT 'SCHEMA' AS kind, quote_ident(n.nspname) AS name FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
          WHERE n.nspname = $1 AND r.rolsuper
         UNION ALL
         SELECT 'TABLE', quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles r ON r.oid = c.relowner
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND r.rolsuper`,
        [platform.scope.publishSchema],
      );
      for (const o of rows) await client.query(`ALTER ${o.kind} ${o.name} OWNER TO ${sqlIdent(publishOwner)}`);
      for (const loader of platform.loaders.slice(1))
        await client.query(`GRANT USAGE, CREATE ON SCHEMA ${publish} TO ${sqlIdent(loader)}`);
    });
    await platform.fillPublish?.(dbUrl);

    const adminUrl = loginUrl(superuserUrl, database, platform.admin);
    const who = { database, login: platform.admin.username };
    // A login refused at the door is probed again once it may connect; otherwise one round must do.
    for (let round = 0, applied = false; ; round++) {
      const probe = await probeWarehouse(adminUrl, platform.scope, who);
      if (!probe.statements.length) break;
      if (round === 2 || (applied && probe.facts))
        throw new Error(
          `probe --warehouse still lists prerequisites after its own statements ran: ${probe.statements.join(" ")}`,
        );
      // The DBA pastes the probe's statements as they are: one session, in order.
      await withPgClient(dbUrl, async (client) => {
        for (const statement of probe.statements) await client.query(statement);
      });
      applied = !!probe.facts;
    }
    return adminUrl;
  });
}
