/**
 * `hub-export probe --warehouse` against the suite's PostgreSQL, as an admin login like RDS's master user on a
 * platform's warehouse (the database owned by a role of its own, the publish schema and its tables by the HR loader):
 * it lists what is missing with the SQL its DBA runs; run as printed, they make a second probe exit 0 and let the
 * postgresql provider's statements for the program run (test/support/postgresqlProvider.ts). The password comes from
 * PGPASSWORD or the prompt, never from the command line, and never shows.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/database";
import { runMain } from "../support/cli";
import { postgresqlResources, replay } from "../support/postgresqlProvider";
import { rawStackConfigFor, engineConfigOf } from "../../bench/platform";
import { databaseUrl, loginUrl } from "../../local/warehouseDba";
import { seedSampleEmployees } from "../../task/model/sampleData";
import { planOf } from "../fixtures/plan";

const suffix = crypto.randomBytes(4).toString("hex");
const ADMIN = { username: `probe_admin_${suffix}`, password: `probe-admin-${suffix}-Pw9` };
const LOADER = `probe_loader_${suffix}`;
const TASK = `probe_task_${suffix}`;

let db: { url: string; name: string; drop(): Promise<void> };
let dir: string;
let stackFile: string;
let raw: Record<string, any>;
/** --database-url without a password, as an operator types it (the embedded server has no TLS). */
let url: string;

async function asDba(sql: string): Promise<void> {
  const c = new Client({ connectionString: db.url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

const probe = (args: string[], options: { env?: Record<string, string | undefined>; input?: string } = {}) =>
  runMain(["probe", "--file", stackFile, "--warehouse", ...args], {
    env: { PGPASSWORD: ADMIN.password, ...options.env },
    input: options.input,
  });

/** The SQL block of the probe's output: the lines between the blank lines after the list. */
const sqlOf = (stdout: string) => stdout.split("\n\n")[2].split("\n");

beforeAll(async () => {
  db = await createTestDatabase("probe");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-probe-warehouse-"));
  // The platform's DBA: the loader's publish schema with its tables, and the admin login, granted nothing yet.
  await asDba(`CREATE ROLE ${LOADER} NOLOGIN`);
  await asDba(`CREATE ROLE ${ADMIN.username} LOGIN CREATEROLE PASSWORD '${ADMIN.password}'`);
  await asDba(`CREATE SCHEMA publish AUTHORIZATION ${LOADER}`);
  const seeder = new Client({ connectionString: db.url });
  await seeder.connect();
  await seedSampleEmployees(seeder, { schema: "publish", count: 5, platRegions: ["US"], loaderRole: LOADER });
  await seeder.end();
  // The stack file: the test platform's config on this database, its admin and task this file's, no secret set.
  const adminUrl = loginUrl(db.url, db.name, ADMIN);
  raw = rawStackConfigFor(adminUrl, {
    queues: { US: "http://127.0.0.1:9", EU: "http://127.0.0.1:9", APAC: "http://127.0.0.1:9" },
    cfg: "http://127.0.0.1:9/cfg/api/",
    ers: "http://127.0.0.1:9/ers/api/",
    hrsys: "http://127.0.0.1:9/hrsys/api/",
  });
  raw.database.task = { username: TASK, password: `probe-task-${suffix}-Pw1` };
  raw.database.publishTableOwners = [LOADER];
  const file = (r: Record<string, any>) => {
    const copy = structuredClone(r);
    for (const login of [copy.database.admin, copy.database.task]) delete login.password;
    for (const t of copy.hubTenants) delete t.clientSecret;
    for (const q of Object.values<Record<string, unknown>>(copy.queues)) delete q.clientSecret;
    return YAML.stringify({ config: Object.fromEntries(Object.entries(copy).map(([k, v]) => [`hubExport:${k}`, v])) });
  };
  stackFile = path.join(dir, "Pulumi.probetest.yaml");
  fs.writeFileSync(stackFile, file(raw));
  const u = new URL(adminUrl);
  u.password = "";
  u.search = "?sslmode=disable";
  url = u.toString();
});

afterAll(async () => {
  await db?.drop();
  const c = new Client({ connectionString: databaseUrl(db.url, "postgres") });
  await c.connect();
  for (const role of [TASK, ADMIN.username, LOADER])
    await c.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await c.end();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("hub-export probe --warehouse", () => {
  it("lists what a fresh admin lacks with the SQL its DBA runs; run as printed, a second probe exits 0 and the program's statements run", async () => {
    const first = await probe(["--database-url", url]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(1);
    const host = new URL(db.url).host;
    expect(first.stdout).toBe(
      [
        `Warehouse: ${db.name} on ${host} as ${ADMIN.username} (--database-url), ${first.stdout.match(/PostgreSQL [\d.]+/)![0]}`,
        `ok       log in to database ${db.name}`,
        "ok       CREATEROLE: it creates the task's login role",
        `MISSING  CREATE on database ${db.name}: the baseline creates the staging schema`,
        `MISSING  CONNECT on database ${db.name} WITH GRANT OPTION (or its ownership): the task role's CONNECT (without it PostgreSQL only warns, and grants nothing)`,
        `MISSING  a member of ${LOADER} WITH INHERIT TRUE, SET TRUE: owner of schema publish, 6 tables in publish; a loader of the publish schema (hubExport:database.publishTableOwners)`,
        "",
        "3 missing: the warehouse's DBA runs (as a superuser, or as the owner of each role and object):",
        "",
        `GRANT CREATE ON DATABASE "${db.name}" TO "${ADMIN.username}";`,
        `GRANT CONNECT ON DATABASE "${db.name}" TO "${ADMIN.username}" WITH GRANT OPTION;`,
        `GRANT "${LOADER}" TO "${ADMIN.username}" WITH INHERIT TRUE, SET TRUE;`,
        "",
        "then probe again.",
        "",
      ].join("\n"),
    );
    expect(first.stdout).not.toContain(ADMIN.password);

    // The DBA pastes the block into psql: one statement per line.
    for (const statement of sqlOf(first.stdout)) await asDba(statement);
    const second = await probe(["--database-url", url]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).not.toContain("MISSING");
    expect(second.stdout.trimEnd().split("\n").at(-1)).toBe(
      `every prerequisite of 'pulumi up' and 'pulumi destroy' holds for ${ADMIN.username}`,
    );

    // What the postgresql provider runs for the program then succeeds (the staging grants need the baseline's tables:
    // test/providers/postgresqlProvider.int.test.ts runs everything; here the role and the publish schema's grants).
    const plan = await planOf(engineConfigOf(raw), "probetest");
    const resources = postgresqlResources(plan).filter(
      (r) => r.type === "Role" || /grant\/(connect|publish-)|default\//.test(r.name),
    );
    expect(resources.map((r) => r.name.replace("hub-export-warehouse/", ""))).toEqual([
      "task-role",
      "grant/connect",
      "grant/publish-usage",
      "grant/publish-tables",
      "default/publish-tables",
      `default/publish-tables/${LOADER}`,
    ]);
    const steps = await replay(
      { url: loginUrl(db.url, db.name, ADMIN), username: ADMIN.username },
      db.name,
      resources,
      "create",
    );
    expect(steps.filter((s) => s.error || s.warnings.length)).toEqual([]);
  });

  it("takes the password at a prompt without echo, or from PGPASSWORD; never shows it", async () => {
    const prompted = await probe(["--database-url", url, "--json"], {
      env: { PGPASSWORD: undefined },
      input: `${ADMIN.password}\n`,
    });
    expect(prompted.code, prompted.stderr).toBe(0);
    expect(prompted.stderr).toBe(`Password for ${ADMIN.username}: \n`);
    const report = JSON.parse(prompted.stdout);
    expect(report).toMatchObject({ passed: true, statements: [] });
    expect(report.prerequisites.every((p: { holds: boolean }) => p.holds)).toBe(true);
    // The stack's own endpoint and admin (no --database-url): the same answer.
    const stack = await probe([]);
    expect(stack.code, stack.stderr).toBe(0);
    expect(stack.stdout).toMatch(
      new RegExp(`^Warehouse: ${db.name} on .* as ${ADMIN.username} \\(hubExport:database\\.admin\\)`),
    );
    for (const r of [prompted, stack]) expect(r.stdout + r.stderr).not.toContain(ADMIN.password);
  });

  it("refuses a password in the URL, a wrong password, an unreachable server, another database, and --database-url without --warehouse, in one line each", async () => {
    const inUrl = new URL(url);
    inUrl.password = "Secret-In-Url-1";
    const refused = await probe(["--database-url", inUrl.toString()]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      "hub-export probe: --database-url must not carry a password (USER:PASSWORD@ before the host): set PGPASSWORD, or type it at the prompt (see 'hub-export probe --help')\n",
    );
    expect(refused.stdout).toBe("");

    const wrong = await probe(["--database-url", url], { env: { PGPASSWORD: "Wrong-Password-7" } });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      new RegExp(
        `^the warehouse refused ${ADMIN.username}: password authentication failed for user "${ADMIN.username}"; check the password \\(PGPASSWORD\\)\\n$`,
      ),
    );
    expect(wrong.stdout + wrong.stderr).not.toContain("Wrong-Password-7");

    const closed = new URL(url);
    closed.port = "1";
    const unreachable = await probe(["--database-url", closed.toString()]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      new RegExp(
        `^cannot connect to the warehouse, ${db.name} on 127\\.0\\.0\\.1:1 as ${ADMIN.username} \\(--database-url\\): .*ECONNREFUSED.*\\n$`,
      ),
    );

    const other = new URL(url);
    other.pathname = "/postgres";
    const elsewhere = await probe(["--database-url", other.toString()]);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`--database-url names database postgres, but the stack's is ${db.name}`);

    const alone = await runMain(["probe", "--file", stackFile, "--database-url", url]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toBe(
      "hub-export probe: --database-url goes with --warehouse (see 'hub-export probe --help')\n",
    );
  });
});
