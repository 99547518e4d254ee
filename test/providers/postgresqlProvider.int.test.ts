/**
 * The postgresql provider's statements for the program's resources (Role, Grant on the database, the schemas and the
 * tables, DefaultPrivileges), replayed from its source (test/support/postgresqlProvider.ts), as an admin login like
 * RDS's master user (LOGIN, CREATEROLE; not a superuser, a member of no role) against the suite's PostgreSQL 18. The
 * warehouse is a shared platform's: the database owned by a role of its own, the publish schema and its tables by the
 * HR loader, the staging schema and its common tables by another pipeline's admin. Both sides, for `up` and `destroy`:
 * without what `probe --warehouse` prints they fail with PostgreSQL's own message (a database grant only warns and
 * grants nothing); once its DBA ran the probe's statements, they succeed.
 */
import crypto from "node:crypto";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/database";
import {
  destroyOrder,
  postgresqlResources,
  replay,
  type PgResource,
  type ReplayedStep,
} from "../support/postgresqlProvider";
import { planOf, one } from "../fixtures/plan";
import { editKey, fixtureStack } from "../fixtures/stacks";
import {
  baselineInputs,
  configureSqlProviders,
  databaseConfigOf,
  pgConnectionOf,
  runTablesInputs,
} from "../fixtures/warehouse";
import { baselineProvider } from "../../providers/baseline";
import { databaseLabel } from "../../providers/pg";
import { configFromEngine } from "../../config/load";
import { withOfflineSecrets } from "../../config/placeholders";
import { loginUrl, databaseUrl } from "../../local/warehouseDba";
import { probeWarehouse } from "../../operate/warehouseProbe";
import { seedSampleEmployees } from "../../task/model/sampleData";
import type { StackConfig } from "../../config/schema";

// Roles of this file's own: memberships are the cluster's, and other files grant the shared platform roles.
const suffix = crypto.randomBytes(4).toString("hex");
const ADMIN = { username: `rds_admin_${suffix}`, password: `rds-admin-${suffix}-Pw1` };
const LOADER = `hr_loader_${suffix}`;
const OTHER = `other_pipeline_${suffix}`;
const TASK = `hub_export_${suffix}`;

let db: { url: string; name: string; drop(): Promise<void> };
let config: StackConfig;
let resources: PgResource[];
let taskPassword: string;
const login = () => ({ url: loginUrl(db.url, db.name, ADMIN), username: ADMIN.username });

async function asDba<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** What `probe --warehouse` prints for the admin, run by the DBA as printed. */
async function probeStatements(): Promise<string[]> {
  const probe = await probeWarehouse(
    login().url,
    { publishSchema: "publish", stagingSchema: "staging", publishTableOwners: [LOADER], taskRole: TASK },
    { database: db.name, login: ADMIN.username },
  );
  return probe.statements;
}
async function runAsDba(statements: string[]): Promise<void> {
  for (const s of statements) await asDba(s);
}

const byName = (steps: ReplayedStep[]) =>
  Object.fromEntries(steps.map((s) => [s.resource.replace(/^\w+ hub-export-warehouse\//, ""), s]));
const named = (pattern: RegExp) => resources.filter((r) => pattern.test(r.name));
const baselines = () => [
  baselineInputs(databaseLabel(pgConnectionOf(login().url)), config),
  runTablesInputs(databaseLabel(pgConnectionOf(login().url)), config),
];

beforeAll(async () => {
  db = await createTestDatabase("pgprovider");
  // The stack: the qa fixture on this database, its admin this file's, the HR loader named as a publish table owner.
  const engine = editKey<Record<string, any>>(
    {
      ...fixtureStack("qa").config,
      "hubExport:publishSchema": `${db.name}.publish`,
      "hubExport:stagingSchema": `${db.name}.staging`,
    },
    "database",
    (d) => ({
      ...d,
      database: db.name,
      admin: { ...d.admin, username: ADMIN.username },
      task: { ...d.task, username: TASK },
      publishTableOwners: [LOADER],
    }),
  );
  config = withOfflineSecrets(configFromEngine(engine, "qa"));
  const plan = await planOf(engine, "qa");
  resources = postgresqlResources(plan);
  // The provider is configured with the stack's admin, on its database, as `superuser: false`.
  const provider = one(plan, "pulumi:providers:postgresql").inputs;
  expect(provider).toMatchObject({ username: ADMIN.username, database: db.name, superuser: "false" });
  taskPassword = resources.find((r) => r.type === "Role")!.inputs.password;

  // The platform's DBA (the suite's superuser): roles, the loader's publish schema with its tables and rows, another
  // pipeline's staging schema with the common tables, and the admin login: LOGIN and CREATEROLE, nothing granted.
  for (const role of [LOADER, OTHER]) await asDba(`CREATE ROLE ${role} NOLOGIN`);
  await asDba(`CREATE ROLE ${ADMIN.username} LOGIN CREATEROLE PASSWORD '${ADMIN.password}'`);
  await asDba(`CREATE SCHEMA publish AUTHORIZATION ${LOADER}`);
  const seeder = new Client({ connectionString: db.url });
  await seeder.connect();
  try {
    await seedSampleEmployees(seeder, {
      schema: "publish",
      count: 20,
      seed: 7,
      platRegions: ["US"],
      loaderRole: LOADER,
    });
    // Another pipeline's admin, with CREATE on the database as the probe would have asked for it, applied its baseline.
    await seeder.query(`GRANT CREATE ON DATABASE "${db.name}" TO ${OTHER}`);
    await seeder.query(`SET ROLE ${OTHER}`);
    await seeder.query(baselineInputs("another pipeline", config).sql);
  } finally {
    await seeder.end();
  }
  await configureSqlProviders(databaseConfigOf(pgConnectionOf(login().url)));
});

afterAll(async () => {
  await db?.drop();
  const c = new Client({ connectionString: databaseUrl(db.url, "postgres") });
  await c.connect();
  for (const role of [TASK, ADMIN.username, LOADER, OTHER])
    await c.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await c.end();
});

describe("the postgresql provider's statements as an admin like RDS's master user, on PostgreSQL 18", () => {
  it("the admin is not a superuser, owns nothing and is a member of no role", async () => {
    const [admin] = await asDba<{ rolsuper: boolean; rolcreaterole: boolean; memberships: number }>(
      "SELECT rolsuper, rolcreaterole, (SELECT count(*)::int FROM pg_auth_members WHERE member = r.oid) AS memberships FROM pg_roles r WHERE rolname = $1",
      [ADMIN.username],
    );
    expect(admin).toEqual({ rolsuper: false, rolcreaterole: true, memberships: 0 });
    const [{ version }] = await asDba<{ version: number }>(
      "SELECT current_setting('server_version_num')::int AS version",
    );
    expect(version).toBeGreaterThanOrEqual(180000);
    expect(resources.map((r) => r.type)).not.toContain("Schema");
  });

  it("up: without the probe's statements every grant fails with PostgreSQL's message and CONNECT only warns; with them all succeed", async () => {
    const roles = named(/task-role$/);
    const grants = resources.filter((r) => r.type !== "Role");
    expect(roles).toHaveLength(1);
    // CREATEROLE is the admin's own: the task's role is created either way (PostgreSQL 16+ gives the admin ADMIN on it).
    const [role] = await replay(login(), db.name, roles, "create");
    expect(role.error).toBeUndefined();
    // The baseline (our provider): CREATE SCHEMA IF NOT EXISTS needs CREATE on the database.
    await expect(baselineProvider.create(baselines()[0])).rejects.toThrow(/permission denied for database/);

    const without = byName(await replay(login(), db.name, grants, "create"));
    const loaderRefused = `permission denied to grant role "${LOADER}"`;
    const otherRefused = `permission denied to grant role "${OTHER}"`;
    for (const key of ["grant/publish-usage", "grant/publish-tables", `default/publish-tables/${LOADER}`]) {
      expect(without[key].error, key).toBe(`error granting role ${LOADER} to ${ADMIN.username}: pq: ${loaderRefused}`);
      expect(without[key].code).toBe("42501");
    }
    const staging = Object.keys(without).filter((k) => k.startsWith("grant/staging"));
    expect(staging.length).toBeGreaterThan(10);
    for (const key of staging) expect(without[key].error, key).toContain(otherRefused);
    // The database grant "succeeds": PostgreSQL only warns, lib/pq drops the warning, and the task gets nothing.
    expect(without["grant/connect"].error).toBeUndefined();
    expect(without["grant/connect"].warnings).toEqual([
      `01006 no privileges could be revoked for "${db.name}"`,
      `01007 no privileges were granted for "${db.name}"`,
    ]);
    expect(without["grant/connect"].read).toEqual({ privileges: [] });
    expect(await connectGranted()).toBe(false);
    // The admin's own default privileges need nothing.
    expect(without["default/publish-tables"].error).toBeUndefined();

    // The DBA runs what the probe prints; `up` again runs what failed and updates the CONNECT grant the read found empty.
    const statements = await probeStatements();
    expect(statements).toEqual([
      `GRANT CREATE ON DATABASE "${db.name}" TO "${ADMIN.username}";`,
      `GRANT CONNECT ON DATABASE "${db.name}" TO "${ADMIN.username}" WITH GRANT OPTION;`,
      `GRANT "${LOADER}" TO "${ADMIN.username}" WITH INHERIT TRUE, SET TRUE;`,
      `GRANT "${OTHER}" TO "${ADMIN.username}" WITH INHERIT TRUE, SET TRUE;`,
    ]);
    await runAsDba(statements);
    expect(await probeStatements()).toEqual([]);
    for (const inputs of baselines()) await baselineProvider.create(inputs);
    const again = grants.filter(
      (r) => without[r.name.replace("hub-export-warehouse/", "")].error || r.name.endsWith("grant/connect"),
    );
    const withThem = await replay(login(), db.name, again, "create");
    expect(withThem.filter((s) => s.error || s.warnings.length)).toEqual([]);
    // The provider found its memberships: it granted itself no role.
    expect(withThem.flatMap((s) => s.statements).filter((s) => /^(GRANT|REVOKE) "/.test(s))).toEqual([]);
    for (const s of withThem) expect(s.read?.privileges, s.resource).toBeDefined();
    expect(await connectGranted()).toBe(true);

    // The task can log in and read the HR loader's tables, and its default privileges cover the loader's next ones.
    const task = new Client({
      connectionString: loginUrl(db.url, db.name, { username: TASK, password: taskPassword }),
    });
    await task.connect();
    try {
      expect((await task.query("SELECT count(*)::int AS n FROM publish.employee")).rows).toEqual([{ n: 20 }]);
      await asDba(`SET ROLE ${LOADER}; CREATE TABLE publish.employee_later (id int); RESET ROLE`);
      expect((await task.query("SELECT count(*)::int AS n FROM publish.employee_later")).rows).toEqual([{ n: 0 }]);
      await expect(task.query("CREATE TABLE staging.x (id int)")).rejects.toThrow(
        /permission denied for schema staging/,
      );
    } finally {
      await task.end();
    }
  });

  it("destroy: without the probe's statements the grants cannot be revoked and the role cannot be dropped; with them all go", async () => {
    const up = await probeStatements();
    expect(up).toEqual([]);
    // The DBA took back what it granted for the first `up` (the grant option with what the admin granted with it).
    await runAsDba([
      `REVOKE "${LOADER}" FROM "${ADMIN.username}"`,
      `REVOKE "${OTHER}" FROM "${ADMIN.username}"`,
      `REVOKE CREATE ON DATABASE "${db.name}" FROM "${ADMIN.username}"`,
      `REVOKE GRANT OPTION FOR CONNECT ON DATABASE "${db.name}" FROM "${ADMIN.username}" CASCADE`,
    ]);
    const order = destroyOrder(resources);
    const without = byName(await replay(login(), db.name, order, "delete"));
    for (const key of ["grant/publish-usage", "grant/publish-tables", `default/publish-tables/${LOADER}`])
      expect(without[key].error, key).toBe(
        `error granting role ${LOADER} to ${ADMIN.username}: pq: permission denied to grant role "${LOADER}"`,
      );
    for (const key of Object.keys(without).filter((k) => k.startsWith("grant/staging")))
      expect(without[key].error, key).toContain(`permission denied to grant role "${OTHER}"`);
    // Revoking the database privilege without the grant option: a warning, never an error.
    expect(without["grant/connect"].error).toBeUndefined();
    expect(without["grant/connect"].warnings).toEqual([`01006 no privileges could be revoked for "${db.name}"`]);
    // The role keeps the privileges the failed deletes left: DROP OWNED cannot revoke the owners' grants, DROP ROLE fails.
    // The role keeps what the failed deletes left, and DROP OWNED cannot take back what the owners granted it: on an
    // object of the other pipeline's where the admin has no privilege at all PostgreSQL refuses (which object comes
    // first is the catalog's order).
    expect(without["task-role"].code).toBe("42501");
    expect(without["task-role"].error).toMatch(
      new RegExp(`^could not drop owned by role ${TASK}: pq: permission denied for (table|sequence|column|schema) `),
    );
    expect(await roleExists(TASK)).toBe(true);

    const statements = await probeStatements();
    expect(statements).toEqual([
      `GRANT CREATE ON DATABASE "${db.name}" TO "${ADMIN.username}";`,
      `GRANT CONNECT ON DATABASE "${db.name}" TO "${ADMIN.username}" WITH GRANT OPTION;`,
      `GRANT "${LOADER}" TO "${ADMIN.username}" WITH INHERIT TRUE, SET TRUE;`,
      `GRANT "${OTHER}" TO "${ADMIN.username}" WITH INHERIT TRUE, SET TRUE;`,
    ]);
    await runAsDba(statements);
    const withThem = await replay(login(), db.name, order, "delete");
    expect(withThem.filter((s) => s.error || s.warnings.length)).toEqual([]);
    expect(await roleExists(TASK)).toBe(false);
    expect(
      await asDba(
        "SELECT 1 FROM pg_default_acl d JOIN pg_namespace n ON n.oid = d.defaclnamespace WHERE n.nspname = 'publish'",
      ),
    ).toEqual([]);
  });
});

async function connectGranted(): Promise<boolean> {
  const [row] = await asDba<{ granted: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM pg_database d, aclexplode(d.datacl) a WHERE d.datname = $1 AND a.grantee = (SELECT oid FROM pg_roles WHERE rolname = $2) AND a.privilege_type = 'CONNECT') AS granted",
    [db.name, TASK],
  );
  return row.granted;
}

async function roleExists(name: string): Promise<boolean> {
  return (await asDba("SELECT 1 FROM pg_roles WHERE rolname = $1", [name])).length === 1;
}
