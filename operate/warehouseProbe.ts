/**
 * `probe --warehouse`: reads, as the admin login and only from the catalog (nothing is changed), what
 * core/warehousePrerequisites.ts needs to say which of `pulumi up`'s and `pulumi destroy`'s prerequisites hold. Local
 * mode's and the test platform's DBA stand-in (local/warehouseDba.ts) applies what it prints.
 */
import type { Client } from "pg";
import { withPgClient, type PgTarget } from "../providers/pg";
import {
  connectPrerequisite,
  missingStatements,
  warehousePrerequisites,
  type OwnedObject,
  type Prerequisite,
  type RoleFacts,
  type WarehouseFacts,
  PG_MEMBERSHIP_OPTIONS,
} from "../core/warehousePrerequisites";

/** What of the stack the prerequisites depend on. */
export interface ProbeScope {
  /** Schema names only. */
  publishSchema: string;
  stagingSchema: string;
  publishTableOwners: string[];
  /** The task's login role, when it is not the admin itself. */
  taskRole?: string;
}

export interface WarehouseProbe {
  /** `PostgreSQL 18.4`; absent when the login could not connect. */
  server?: string;
  /** Absent when the login could not connect. */
  facts?: WarehouseFacts;
  prerequisites: Prerequisite[];
  /** What the DBA runs, in order: empty when every prerequisite holds. */
  statements: string[];
}

/** Reads the facts with `client`, connected to the stack's database as the admin login. */
export async function readWarehouseFacts(client: Client, scope: ProbeScope): Promise<WarehouseFacts> {
  const { rows: me } = await client.query<{
    login: string;
    database: string;
    version: number;
    superuser: boolean;
    createrole: boolean;
    inherit: boolean;
    db_owner: string;
    can_create: boolean;
    connect_grant: boolean;
  }>(
    `SELECT current_user AS login, current_database() AS database,
            current_setting('server_version_num')::int AS version,
            r.rolsuper AS superuser, r.rolcreaterole AS createrole, r.rolinherit AS inherit,
            pg_get_userbyid(d.datdba) AS db_owner,
            has_database_privilege(current_database(), 'CREATE') AS can_create,
            has_database_privilege(current_database(), 'CONNECT WITH GRANT OPTION') AS connect_grant
       FROM pg_catalog.pg_roles r, pg_catalog.pg_database d
      WHERE r.rolname = current_user AND d.datname = current_database()`,
  );
  const self = me[0];
  // What the program grants on (the publish schema's tables, views and foreign tables: GRANT ... ON ALL TABLES) and
  // what the baseline changes (the staging schema's objects; a serial's sequence follows its table).
  const { rows: objects } = await client.query<OwnedObject & { name: string | null }>(
    `SELECT * FROM (
     SELECT 'schema' AS kind, n.nspname AS schema, NULL::text AS name, pg_get_userbyid(n.nspowner) AS owner
       FROM pg_catalog.pg_namespace n WHERE n.nspname IN ($1, $2)
     UNION ALL
     SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view'
                 WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'sequence' END,
            n.nspname, c.relname, pg_get_userbyid(c.relowner)
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE (n.nspname IN ($1, $2) AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))
         OR (n.nspname = $2 AND c.relkind = 'S' AND NOT EXISTS (
               SELECT 1 FROM pg_catalog.pg_depend d
                WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
     UNION ALL
     SELECT 'routine', n.nspname, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
            pg_get_userbyid(p.proowner)
       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $2
     ) o ORDER BY schema, kind <> 'schema', kind, name`,
    [scope.publishSchema, scope.stagingSchema],
  );
  const owned: OwnedObject[] = objects.map((o) => ({
    kind: o.kind,
    schema: o.schema,
    ...(o.name === null ? {} : { name: o.name }),
    owner: o.owner,
  }));
  const names = [
    ...new Set([
      ...owned.map((o) => (o.owner === "pg_database_owner" ? self.db_owner : o.owner)),
      ...scope.publishTableOwners,
      ...(scope.taskRole ? [scope.taskRole] : []),
    ]),
  ];
  // The provider's own membership check (helpers.go isMemberOfRole): a direct row, WITH SET from PostgreSQL 16.
  const set = self.version >= PG_MEMBERSHIP_OPTIONS ? "m.set_option" : "true";
  const { rows: found } = await client.query<{
    name: string;
    superuser: boolean;
    direct_set: boolean;
    admin_option: boolean;
    privileges: boolean;
  }>(
    `SELECT r.rolname AS name, r.rolsuper AS superuser,
            EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = r.oid AND m.member = me.oid AND ${set}) AS direct_set,
            EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = r.oid AND m.member = me.oid AND m.admin_option) AS admin_option,
            pg_has_role(me.oid, r.oid, 'USAGE') AS privileges
       FROM pg_catalog.pg_roles r, pg_catalog.pg_roles me
      WHERE me.rolname = current_user AND r.rolname = ANY($1::text[])`,
    [names],
  );
  const roles: RoleFacts[] = names.map((name) => {
    const r = found.find((f) => f.name === name);
    return {
      name,
      exists: !!r,
      superuser: r?.superuser ?? false,
      directSet: r?.direct_set ?? false,
      privileges: r?.privileges ?? false,
      adminOption: r?.admin_option ?? false,
    };
  });
  return {
    serverVersion: self.version,
    login: { name: self.login, superuser: self.superuser, createRole: self.createrole, inherit: self.inherit },
    database: {
      name: self.database,
      owner: self.db_owner,
      create: self.can_create,
      connectWithGrantOption: self.connect_grant,
    },
    publishSchema: scope.publishSchema,
    stagingSchema: scope.stagingSchema,
    objects: owned,
    publishTableOwners: scope.publishTableOwners,
    ...(scope.taskRole ? { taskRole: scope.taskRole } : {}),
    roles,
  };
}

/** PostgreSQL's refusal of a login without CONNECT on the database (42501 "permission denied for database"). */
export function isConnectRefusal(err: unknown): boolean {
  return (err as { code?: string }).code === "42501";
}

/** The login could not connect (the server unreachable, TLS, authentication): the server's own words are the cause. */
export class WarehouseConnectError extends Error {
  readonly code?: string;
  constructor(cause: Error & { code?: string }) {
    super(cause.message, { cause });
    this.code = cause.code;
  }
}

/**
 * Probes the warehouse as the login of `target` (its database is the stack's). A login PostgreSQL refuses for want of
 * CONNECT gets that one prerequisite; any other failure to connect is a WarehouseConnectError.
 */
export async function probeWarehouse(
  target: PgTarget,
  scope: ProbeScope,
  who: { database: string; login: string },
): Promise<WarehouseProbe> {
  let connected = false;
  try {
    return await withPgClient(target, async (client) => {
      connected = true;
      const facts = await readWarehouseFacts(client, scope);
      const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
      const prerequisites = warehousePrerequisites(facts);
      return {
        server: `PostgreSQL ${rows[0].v.split(" ")[0]}`,
        facts,
        prerequisites,
        statements: missingStatements(prerequisites),
      };
    });
  } catch (err) {
    if (connected) throw err;
    if (!isConnectRefusal(err)) throw new WarehouseConnectError(err as Error);
    const prerequisites = [connectPrerequisite(who.database, who.login)];
    return { prerequisites, statements: missingStatements(prerequisites) };
  }
}
