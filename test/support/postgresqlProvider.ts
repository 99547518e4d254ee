/**
 * The SQL that @pulumi/postgresql 3.18.1 runs for the program's postgresql.* resources, replayed statement by statement
 * from the provider's source: cyrilgdn/terraform-provider-postgresql at ff936b9548c1076f498523a2bd116915ff977142 (the
 * `upstream` submodule of pulumi/pulumi-postgresql, no fork, no SQL patched), files under postgresql/, cited as
 * file:line. Each resource of an offline plan (test/fixtures/plan.ts planOf) with its inputs becomes the create (for
 * `up`) or delete (for `destroy`) the provider would run, in its transactions, as the provider's login (`superuser:
 * false`), with the same statements and bind parameters, and its errors wrapped as it wraps them (`pq: <message>`).
 * PostgreSQL's WARNINGs are kept: lib/pq drops them, so the provider never sees them.
 *
 * Left out, since they change nothing on the server: configure (provider.go:333, no SQL), Connect's `;` ping and
 * `SELECT VERSION()` (config.go:305, :344), and the refresh reads.
 */
import zlib from "node:zlib";
import { Client } from "pg";
import type { PlanRun, PlannedResource } from "../../components/planner";
import { revealValue } from "../../components/planner/values";

/** What the provider connects as: its `username` and a URL of the server (the database is each call's). */
export interface ProviderLogin {
  url: string;
  username: string;
}

/** A postgresql.* resource of the plan, its inputs revealed. */
export interface PgResource {
  type: "Role" | "Grant" | "DefaultPrivileges" | "Schema";
  name: string;
  inputs: Record<string, any>;
}

export interface ReplayedStep {
  resource: string;
  operation: "create" | "delete";
  /** The provider's error, as it would report it (`pq: <PostgreSQL's message>` wrapped as the source wraps it). */
  error?: string;
  /** PostgreSQL's SQLSTATE of the failed statement. */
  code?: string;
  /** PostgreSQL's WARNINGs, `<SQLSTATE> <message>`: invisible to the provider. */
  warnings: string[];
  statements: string[];
  /** After a create: what the provider's read stores (Grant and DefaultPrivileges `privileges`, Role existence). */
  read?: { privileges?: string[]; exists?: boolean };
}

const TYPES: Record<string, PgResource["type"]> = {
  "postgresql:index/role:Role": "Role",
  "postgresql:index/grant:Grant": "Grant",
  "postgresql:index/defaultPrivileges:DefaultPrivileges": "DefaultPrivileges",
  "postgresql:index/schema:Schema": "Schema",
};

/** The plan's postgresql.* resources in registration order (the order `up` creates them; dependencies agree). */
export function postgresqlResources(plan: PlanRun): PgResource[] {
  return plan.resources
    .filter((r: PlannedResource) => TYPES[r.type])
    .map((r) => ({ type: TYPES[r.type], name: r.name, inputs: revealValue(r.inputs) as Record<string, any> }));
}

/** pq.QuoteIdentifier (lib/pq conn.go): always double-quoted. */
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
/** pqQuoteLiteral (helpers.go:49-54) inside quotes. */
const literal = (value: string) => `'${value.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;

/**
 * A TypeSet's List() order (terraform-plugin-sdk helper/schema/set.go listCode: keys are the decimal strings of
 * crc32(IEEE), sorted as strings): the order privileges and objects appear in the SQL.
 */
export function setOrder(values: string[]): string[] {
  return [...values].sort((a, b) => {
    const [x, y] = [String(zlib.crc32(a)), String(zlib.crc32(b))];
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

class ProviderError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** One provider transaction (helpers.go:390 startTransaction: lib/pq BEGIN ... COMMIT on the resource's database). */
class Transaction {
  constructor(
    private readonly client: Client,
    private readonly step: ReplayedStep,
  ) {}

  async query<T extends Record<string, any>>(sql: string, params?: unknown[]): Promise<T[]> {
    this.step.statements.push(sql);
    return (await this.client.query<T>(sql, params)).rows;
  }

  /** A statement whose error the provider wraps (`fmt.Errorf("<prefix>: %w", err)`); lib/pq prints `pq: `. */
  async exec(sql: string, prefix?: string): Promise<void> {
    try {
      await this.query(sql);
    } catch (err) {
      const e = err as Error & { code?: string };
      throw new ProviderError(`${prefix ? `${prefix}: ` : ""}pq: ${e.message}`, e.code);
    }
  }
}

async function inTransaction(
  login: ProviderLogin,
  database: string,
  step: ReplayedStep,
  fn: (txn: Transaction) => Promise<void>,
  commit = true,
): Promise<void> {
  const url = new URL(login.url);
  url.pathname = "/" + encodeURIComponent(database);
  // Terraform provider's fallback_application_name (config.go:221-252): the sessions show it.
  const client = new Client({ connectionString: url.toString(), application_name: "Terraform provider" });
  client.on("notice", (n: { code?: string; message?: string }) => step.warnings.push(`${n.code} ${n.message}`));
  await client.connect();
  try {
    await client.query("BEGIN");
    await fn(new Transaction(client, step));
    // deferredRollback (helpers.go:457) after a read; Commit after a write.
    await client.query(commit ? "COMMIT" : "ROLLBACK");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}

/** isMemberOfRole (helpers.go:57-86): a direct membership, WITH SET where the server has the column (PostgreSQL 16+). */
async function isMemberOfRole(txn: Transaction, role: string, member: string): Promise<boolean> {
  const setOption = await txn.query(
    "SELECT 1 FROM information_schema.columns WHERE table_name='pg_auth_members' AND column_name = 'set_option'",
  );
  let query = "SELECT 1 FROM pg_auth_members WHERE pg_get_userbyid(roleid) = $1 AND pg_get_userbyid(member) = $2";
  if (setOption.length) query += " AND set_option";
  return (await txn.query(query, [role, member])).length > 0;
}

/** grantRoleMembership (helpers.go:91-113). */
async function grantRoleMembership(txn: Transaction, role: string, member: string): Promise<boolean> {
  if (member === role) return false;
  if (await isMemberOfRole(txn, role, member)) return false;
  await txn.exec(`GRANT ${ident(role)} TO ${ident(member)}`, `error granting role ${role} to ${member}`);
  return true;
}

/** revokeRoleMembership (helpers.go:117-137). */
async function revokeRoleMembership(txn: Transaction, role: string, member: string): Promise<boolean> {
  if (member === role) return false;
  if (!(await isMemberOfRole(txn, role, member))) return false;
  await txn.exec(`REVOKE ${ident(role)} FROM ${ident(member)}`, `error revoking role ${role} from ${member}`);
  return true;
}

/** isSuperuser (helpers.go:561-569); a missing role is database/sql's ErrNoRows. */
async function isSuperuser(txn: Transaction, role: string): Promise<boolean> {
  const rows = await txn.query<{ rolsuper: boolean }>("SELECT rolsuper FROM pg_roles WHERE rolname = $1", [role]);
  if (!rows.length) throw new ProviderError(`could not check if role ${role} is superuser: sql: no rows in result set`);
  return rows[0].rolsuper;
}

/** withRolesGranted (helpers.go:142-239): the temporary memberships in `roles` around `fn`. */
async function withRolesGranted(txn: Transaction, roles: string[], fn: () => Promise<void>): Promise<void> {
  if (roles.length === 0) return fn(); // l.144-146
  const [{ current_user: currentUser }] = await txn.query<{ current_user: string }>("SELECT CURRENT_USER"); // l.445
  if (await isSuperuser(txn, currentUser)) return fn(); // l.152-160
  const granted: string[] = [];
  const revoked: string[] = [];
  for (const role of roles) {
    if (await isSuperuser(txn, role)) continue; // l.166-175
    if (await revokeRoleMembership(txn, currentUser, role)) revoked.push(role); // l.193-199: the reverse edge
    if (await grantRoleMembership(txn, role, currentUser)) granted.push(role); // l.202-208
  }
  await fn(); // l.212
  for (const role of granted) await revokeRoleMembership(txn, role, currentUser); // l.217-221
  for (const role of revoked) {
    // l.224-236
    const exists = await txn.query("SELECT 1 FROM pg_roles WHERE rolname=$1", [role]); // roleExists l.420
    if (exists.length) await grantRoleMembership(txn, currentUser, role);
  }
}

/** pgLockRole (helpers.go:586-603). */
async function pgLockRole(txn: Transaction, role: string): Promise<void> {
  await txn.query("SET statement_timeout = 0");
  await txn.query("SELECT pg_advisory_xact_lock(oid::bigint) FROM pg_roles WHERE rolname = $1", [role]);
  await txn.query(
    "SELECT pg_advisory_xact_lock(member::bigint) FROM pg_auth_members JOIN pg_roles ON roleid = pg_roles.oid WHERE rolname = $1",
    [role],
  );
}

/** pgLockDatabase (helpers.go:606-616). */
async function pgLockDatabase(txn: Transaction, database: string): Promise<void> {
  await txn.query("SET statement_timeout = 0");
  await txn.query("SELECT pg_advisory_xact_lock(oid::bigint) FROM pg_database WHERE datname = $1", [database]);
}

/** getRolesToGrant (resource_postgresql_grant.go:800-835) with getTablesOwner, getSchemaOwner, resolveOwners. */
async function getRolesToGrant(txn: Transaction, inputs: Record<string, any>): Promise<string[]> {
  if (inputs.objectType === "database") return []; // l.807-809
  let owners: string[] = [];
  if (inputs.objectType !== "schema") {
    // helpers.go:526
    const rows = await txn.query<{ tableowner: string }>(
      "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = $1",
      [inputs.schema],
    );
    owners = rows.map((r) => r.tableowner);
  }
  // helpers.go:505-510
  const schema = await txn.query<{ rolname: string }>(
    `
SELECT rolname
  FROM pg_namespace
  JOIN pg_roles ON nspowner = pg_roles.oid
  WHERE nspname = $1
`,
    [inputs.schema],
  );
  if (!schema.length) throw new ProviderError(`could not find schema '${inputs.schema}' while looking for owner`);
  if (!owners.includes(schema[0].rolname)) owners.push(schema[0].rolname);
  const resolved: string[] = [];
  for (const owner of owners) {
    if (owner !== "pg_database_owner") {
      resolved.push(owner);
      continue;
    }
    // getDatabaseOwner(db, "") helpers.go:486-491
    const [db] = await txn.query<{ rolname: string }>(`
SELECT rolname
  FROM pg_database
  JOIN pg_roles ON datdba = pg_roles.oid
  WHERE datname = current_database()
`);
    resolved.push(db.rolname);
  }
  return resolved;
}

/** createGrantQuery (resource_postgresql_grant.go:539-608) for the object types the program uses. */
function grantQuery(i: Record<string, any>): string {
  const privileges = setOrder(i.privileges).join(",");
  if (i.objectType === "database") return `GRANT ${privileges} ON DATABASE ${ident(i.database)} TO ${ident(i.role)}`;
  if (i.objectType === "schema") return `GRANT ${privileges} ON SCHEMA ${ident(i.schema)} TO ${ident(i.role)}`;
  const objects: string[] = i.objects ?? [];
  if (objects.length)
    return `GRANT ${privileges} ON ${i.objectType.toUpperCase()} ${objectList(i.schema, objects)} TO ${ident(i.role)}`;
  return `GRANT ${privileges} ON ALL ${i.objectType.toUpperCase()}S IN SCHEMA ${ident(i.schema)} TO ${ident(i.role)}`;
}

/** createRevokeQuery (resource_postgresql_grant.go:610-689). */
function revokeQuery(i: Record<string, any>): string {
  if (i.objectType === "database")
    return `REVOKE ALL PRIVILEGES ON DATABASE ${ident(i.database)} FROM ${ident(i.role)}`;
  if (i.objectType === "schema") return `REVOKE ALL PRIVILEGES ON SCHEMA ${ident(i.schema)} FROM ${ident(i.role)}`;
  const objects: string[] = i.objects ?? [];
  const type = i.objectType.toUpperCase();
  if (!objects.length)
    return `REVOKE ALL PRIVILEGES ON ALL ${type}S IN SCHEMA ${ident(i.schema)} FROM ${ident(i.role)}`;
  const privileges: string[] = i.privileges ?? [];
  return privileges.length
    ? `REVOKE ${setOrder(privileges).join(",")} ON ${type} ${objectList(i.schema, objects)} FROM ${ident(i.role)}`
    : `REVOKE ALL PRIVILEGES ON ${type} ${objectList(i.schema, objects)} FROM ${ident(i.role)}`;
}

/** setToPgIdentList (helpers.go:360-369) with quoteIdentifyIdent (l.340-358). */
function objectList(schema: string, objects: string[]): string {
  return setOrder(objects)
    .map((o) => `${ident(schema)}.${ident(o.split("(")[0])}${o.includes("(") ? `(${o.split("(")[1]}` : ""}`)
    .join(",");
}

/** The read after a Grant's create (readRolePrivileges, resource_postgresql_grant.go:266-307, :483-536). */
async function readGrant(txn: Transaction, i: Record<string, any>): Promise<string[]> {
  const [{ oid }] = await txn.query<{ oid: number }>("SELECT oid FROM pg_roles WHERE rolname = $1", [i.role]); // helpers.go:579
  const wanted = [...i.privileges].sort();
  if (i.objectType === "database" || i.objectType === "schema") {
    const [catalog, acl, key] =
      i.objectType === "database" ? ["pg_database", "datacl", "datname"] : ["pg_namespace", "nspacl", "nspname"];
    const [{ array_agg }] = await txn.query<{ array_agg: string[] | null }>(
      `
SELECT array_agg(privilege_type)
FROM (
	SELECT (aclexplode(${acl})).* FROM ${catalog} WHERE ${key}=$1
) as privileges
WHERE grantee = $2
`,
      [i.objectType === "database" ? i.database : i.schema, oid],
    );
    return [...(array_agg ?? [])].sort();
  }
  const rows = await txn.query<{ relname: string; array_remove: string[] }>(
    `
SELECT pg_class.relname, array_remove(array_agg(privilege_type), NULL)
FROM pg_class
JOIN pg_namespace ON pg_namespace.oid = pg_class.relnamespace
LEFT JOIN (
    SELECT acls.* FROM (
        SELECT relname, relnamespace, relkind, (aclexplode(relacl)).* FROM pg_class c
    ) as acls
    WHERE grantee=$1
) privs
USING (relname, relnamespace, relkind)
WHERE nspname = $2 AND relkind = $3
GROUP BY pg_class.relname
`,
    [oid, i.schema, i.objectType === "sequence" ? "S" : "r"],
  );
  const objects: string[] = i.objects ?? [];
  // The first object whose privileges differ is what the state keeps (l.519-533).
  for (const row of rows) {
    if (objects.length && !objects.includes(row.relname)) continue;
    const has = [...row.array_remove].sort();
    if (JSON.stringify(has) !== JSON.stringify(wanted)) return has;
  }
  return wanted;
}

async function grantCreate(login: ProviderLogin, i: Record<string, any>, step: ReplayedStep): Promise<void> {
  // resource_postgresql_grant.go:139-222
  await inTransaction(login, i.database, step, async (txn) => {
    await pgLockRole(txn, i.role); // l.180
    if (i.objectType === "database") await pgLockDatabase(txn, i.database); // l.184-188
    const owners = await getRolesToGrant(txn, i); // l.190
    await withRolesGranted(txn, owners, async () => {
      await txn.exec(revokeQuery(i), "could not execute revoke query"); // l.198, :727-728
      await txn.exec(grantQuery(i)); // l.201, :704-705
    });
  });
  await inTransaction(
    login,
    i.database,
    step,
    async (txn) => {
      step.read = { privileges: await readGrant(txn, i) }; // l.215-221
    },
    false,
  );
}

async function grantDelete(login: ProviderLogin, i: Record<string, any>, step: ReplayedStep): Promise<void> {
  // resource_postgresql_grant.go:224-264
  await inTransaction(login, i.database, step, async (txn) => {
    await pgLockRole(txn, i.role); // l.237
    if (i.objectType === "database") await pgLockDatabase(txn, i.database); // l.242-246
    const owners = await getRolesToGrant(txn, i); // l.248
    await withRolesGranted(txn, owners, () => txn.exec(revokeQuery(i), "could not execute revoke query")); // l.253-255
  });
}

const inSchema = (i: Record<string, any>) => (i.schema ? `IN SCHEMA ${ident(i.schema)}` : "");

async function defaultPrivilegesCreate(login: ProviderLogin, i: Record<string, any>, step: ReplayedStep) {
  // resource_postgresql_default_privileges.go:116-189
  await inTransaction(login, i.database, step, async (txn) => {
    await pgLockRole(txn, i.owner); // l.154
    await withRolesGranted(txn, [i.owner], async () => {
      // l.164, revokeRoleDefaultPrivileges l.348-357
      await txn.exec(
        `ALTER DEFAULT PRIVILEGES FOR ROLE ${ident(i.owner)} ${inSchema(i)} REVOKE ALL ON ${i.objectType.toUpperCase()}S FROM ${ident(i.role)}`,
        "could not revoke default privileges",
      );
      // l.168, grantRoleDefaultPrivileges l.317-333
      await txn.exec(
        `ALTER DEFAULT PRIVILEGES FOR ROLE ${ident(i.owner)} ${inSchema(i)} GRANT ${setOrder(i.privileges).join(",")} ON ${i.objectType.toUpperCase()}S TO ${ident(i.role)}`,
        "could not alter default privileges",
      );
    });
  });
  // readRoleDefaultPrivileges l.227-294 (with its own pgLockRole, l.234)
  await inTransaction(
    login,
    i.database,
    step,
    async (txn) => {
      await pgLockRole(txn, i.owner);
      const [{ oid }] = await txn.query<{ oid: number }>("SELECT oid FROM pg_roles WHERE rolname = $1", [i.role]);
      const [{ array_agg }] = await txn.query<{ array_agg: string[] | null }>(
        `SELECT array_agg(prtype) FROM (
		SELECT defaclnamespace, (aclexplode(defaclacl)).* FROM pg_default_acl
		WHERE defaclobjtype = $3
	) AS t (namespace, grantor_oid, grantee_oid, prtype, grantable)
	JOIN pg_namespace ON pg_namespace.oid = namespace
	WHERE grantee_oid = $1 AND nspname = $2 AND pg_get_userbyid(grantor_oid) = $4;
`,
        [oid, i.schema, "r", i.owner],
      );
      step.read = { privileges: [...(array_agg ?? [])].sort() };
    },
    false,
  );
}

async function defaultPrivilegesDelete(login: ProviderLogin, i: Record<string, any>, step: ReplayedStep) {
  // resource_postgresql_default_privileges.go:191-225
  await inTransaction(login, i.database, step, async (txn) => {
    await pgLockRole(txn, i.owner); // l.209
    await withRolesGranted(txn, [i.owner], () =>
      txn.exec(
        `ALTER DEFAULT PRIVILEGES FOR ROLE ${ident(i.owner)} ${inSchema(i)} REVOKE ALL ON ${i.objectType.toUpperCase()}S FROM ${ident(i.role)}`,
        "could not revoke default privileges",
      ),
    );
  });
}

/** The provider's database (provider `database` input): Role runs there (startTransaction(db.client, "")). */
async function roleCreate(login: ProviderLogin, database: string, i: Record<string, any>, step: ReplayedStep) {
  // resource_postgresql_role.go:200-380; provider defaults: encrypted_password true, valid_until "infinity",
  // connection_limit -1, bypass_row_level_security false; BYPASSRLS (>= 9.5) and REPLICATION (>= 9.1) included.
  const bool = (value: boolean, on: string) => (value ? on : `NO${on}`);
  const options = [
    "ENCRYPTED",
    `PASSWORD ${literal(i.password)}`,
    "VALID UNTIL 'infinity'",
    "CONNECTION LIMIT -1",
    bool(i.superuser, "SUPERUSER"),
    bool(i.createDatabase, "CREATEDB"),
    bool(i.createRole, "CREATEROLE"),
    bool(i.inherit, "INHERIT"),
    bool(i.login, "LOGIN"),
    bool(false, "BYPASSRLS"),
    bool(i.replication, "REPLICATION"),
  ];
  await inTransaction(login, database, step, async (txn) => {
    await txn.exec(`CREATE ROLE ${ident(i.name)} WITH ${options.join(" ")}`, `error creating role ${i.name}`); // l.347-350
    // grantRoles (l.353): no `roles` input; alterSearchPath (l.357, l.1063-1067): always.
    await txn.exec(
      `ALTER ROLE ${ident(i.name)} SET search_path TO DEFAULT`,
      `could not set search_path DEFAULT for ${i.name}`,
    );
  });
  // resourcePostgreSQLRoleReadImpl l.485-491, outside a transaction (the pool).
  const client = new Client({ connectionString: databaseUrl(login, database) });
  await client.connect();
  try {
    step.statements.push("SELECT ARRAY(...), rolname, ... FROM pg_catalog.pg_roles WHERE rolname=$1");
    const { rowCount } = await client.query(
      `SELECT ARRAY(
			SELECT pg_get_userbyid(roleid) FROM pg_catalog.pg_auth_members members WHERE member = pg_roles.oid
		), rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit, COALESCE(rolvaliduntil::TEXT, 'infinity'), rolconfig, rolreplication, rolbypassrls
		FROM pg_catalog.pg_roles WHERE rolname=$1`,
      [i.name],
    );
    step.read = { exists: rowCount === 1 };
  } finally {
    await client.end();
  }
}

async function roleDelete(login: ProviderLogin, database: string, i: Record<string, any>, step: ReplayedStep) {
  // resource_postgresql_role.go:382-423 (skip_reassign_owned and skip_drop_role false)
  await inTransaction(login, database, step, async (txn) => {
    await pgLockRole(txn, i.name); // l.391
    await withRolesGranted(txn, [i.name], async () => {
      // l.397: the provider's configured username, not CURRENT_USER
      await txn.exec(
        `REASSIGN OWNED BY ${ident(i.name)} TO ${ident(login.username)}`,
        `could not reassign owned by role ${i.name} to ${login.username}`,
      );
      await txn.exec(`DROP OWNED BY ${ident(i.name)}`, `could not drop owned by role ${i.name}`); // l.402
    });
    await txn.exec(`DROP ROLE ${ident(i.name)}`, `could not delete role ${i.name}`); // l.411
  });
}

function databaseUrl(login: ProviderLogin, database: string): string {
  const url = new URL(login.url);
  url.pathname = "/" + encodeURIComponent(database);
  return url.toString();
}

/**
 * Runs each resource's create or delete as the provider would, one after the other (a failure is recorded and the
 * next resource still runs, as the engine runs independent resources). `database` is the provider's own.
 */
export async function replay(
  login: ProviderLogin,
  database: string,
  resources: PgResource[],
  operation: "create" | "delete",
): Promise<ReplayedStep[]> {
  const steps: ReplayedStep[] = [];
  for (const r of resources) {
    const step: ReplayedStep = { resource: `${r.type} ${r.name}`, operation, warnings: [], statements: [] };
    steps.push(step);
    const i = r.inputs;
    try {
      if (r.type === "Role")
        await (operation === "create" ? roleCreate : roleDelete)(login, i.database ?? database, i, step);
      else if (r.type === "Grant") await (operation === "create" ? grantCreate : grantDelete)(login, i, step);
      else if (r.type === "DefaultPrivileges")
        await (operation === "create" ? defaultPrivilegesCreate : defaultPrivilegesDelete)(login, i, step);
      else throw new Error(`no replay of postgresql.${r.type} (resource_postgresql_schema.go): add it here`);
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      step.error = err.message;
      step.code = err.code;
    }
  }
  return steps;
}

/** `destroy`'s order: the reverse of `up`'s (every Grant and DefaultPrivileges before the Role they name). */
export function destroyOrder(resources: PgResource[]): PgResource[] {
  return [...resources].reverse();
}
