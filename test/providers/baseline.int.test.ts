/**
 * The baseline provider against embedded PostgreSQL: applied on create, applied again only when its rendered SQL
 * (sha256) changes, all-or-nothing, drift (a dropped table or column) seen by read, never dropped on delete.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { renderBaseline, renderCommonSchema } from "../../core/baseline";
import { loadClientRunTables, loadSqlBaseline } from "../../templates";
import {
  applyBaseline,
  baselineProvider,
  baselineTables,
  missingBaselineColumns,
  missingBaselineTables,
} from "../../providers/baseline";
import { sha256Hex } from "../../providers/json";
import { baselineInputs, runTablesInputs, warehouseWithBaseline, type Warehouse } from "../fixtures/warehouse";
import { Client } from "pg";
import { createTestDatabase } from "../support/database";
import { configFromEngine } from "../../config/load";
import { fixtureStack } from "../fixtures/stacks";
import { intakeJobWrittenWhenPresent } from "../../core/intakeJob";
import { clientRunTables, commonSchemaTables } from "../../core/sqlTables";
import type { StackConfig } from "../../config/schema";

let wh: Warehouse;

beforeAll(async () => {
  wh = await warehouseWithBaseline("baseline");
});
afterAll(async () => {
  await wh?.drop();
});

const tablesIn = async (schema: string) =>
  (
    await wh.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
      [schema],
    )
  ).map((r) => r.table_name);

describe("baseline provider", () => {
  it("creates every table of the common baseline and of the client's run tables in the staging schema", async () => {
    const common = baselineTables(renderCommonSchema(loadSqlBaseline(), wh.config));
    const client = baselineTables(renderBaseline(loadClientRunTables(), wh.config));
    for (const t of [...common, ...client]) expect(t.startsWith("staging.")).toBe(true);
    expect(await tablesIn("staging")).toEqual([...common, ...client].map((t) => t.slice("staging.".length)).sort());
    expect(common).toEqual(
      expect.arrayContaining([
        "staging.hub_api_config",
        "staging.hub_plat_config",
        "staging.hub_intake_job",
        "staging.hub_export_run_history",
      ]),
    );
    expect(common.filter((t) => t.includes("acme"))).toEqual([]);
    expect(client.sort()).toEqual([
      "staging.hub_acme_messages",
      "staging.hub_acme_messages_archive",
      "staging.hub_acme_messages_status",
      "staging.hub_acme_rows_held_back",
    ]);
  });

  it("creates exactly the tables and columns core/sqlTables.ts declares, in their order (before any test adds one)", async () => {
    const declared = {
      ...commonSchemaTables(wh.config.stagingSchema),
      ...clientRunTables(wh.config.stagingSchema, wh.config.clientName),
    };
    const inDb = await wh.query<{ t: string; columns: string[] }>(
      `SELECT table_schema || '.' || table_name AS t, array_agg(column_name::text ORDER BY ordinal_position) AS columns
         FROM information_schema.columns WHERE table_schema = 'staging' GROUP BY 1`,
    );
    expect(Object.fromEntries(inDb.map((r) => [r.t, r.columns]))).toEqual(declared);
    expect(await missingBaselineColumns(wh.connection, declared)).toEqual([]);
  });

  it("is idempotent: the same baseline applied again changes nothing", async () => {
    const inputs = baselineInputs(wh.target, wh.config);
    await wh.query("INSERT INTO staging.hub_intake_job (job_name, transaction_id) VALUES ('j', gen_random_uuid())");
    await baselineProvider.create(inputs);
    expect(await wh.query("SELECT count(*)::int AS n FROM staging.hub_intake_job")).toEqual([{ n: 1 }]);
  });

  it("diffs on the sha256 of the rendered SQL and applies a new baseline on update", async () => {
    const olds = baselineInputs(wh.target, wh.config);
    expect(await baselineProvider.diff!("id", olds, { ...olds })).toEqual({ changes: false });
    // Another database is applied to again.
    expect(await baselineProvider.diff!("id", olds, { ...olds, target: "other:5432/PLATDB" })).toEqual({
      changes: true,
    });

    const sql = `${olds.sql}\nCREATE TABLE IF NOT EXISTS staging.HUB_BASELINE_PROBE (id integer PRIMARY KEY);\n`;
    const news = baselineInputs(wh.target, wh.config, sql);
    expect(news.sha256).not.toBe(olds.sha256);
    expect(await baselineProvider.diff!("id", olds, news)).toEqual({ changes: true });
    const updated = await baselineProvider.update!("id", olds, news);
    expect(updated.outs!.sha256).toBe(sha256Hex(sql));
    expect(await tablesIn("staging")).toContain("hub_baseline_probe");
  });

  it("applies all or nothing: a failing baseline leaves the database as it was", async () => {
    const before = await tablesIn("staging");
    const sql = "CREATE TABLE staging.half_applied (x integer);\nSELECT 1 / 0;";
    const error = await applyBaseline(wh.connection, {
      sql,
      name: "Hub_Plat_Common_Schema_Baseline_99",
      tables: {},
    }).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^Hub_Plat_Common_Schema_Baseline_99: applying the baseline to 127\.0\.0\.1:\d+\/\w+ failed, nothing was changed: division by zero/,
    );
    expect((error as Error).message).not.toContain(wh.connection.password);
    expect(await tablesIn("staging")).toEqual(before);
  });

  it("rejects SQL whose sha256 does not match", async () => {
    const inputs = baselineInputs(wh.target, wh.config);
    expect((await baselineProvider.check!(inputs, { ...inputs, sql: `${inputs.sql}\n-- edited` })).failures).toEqual([
      { property: "sha256", reason: "is not the sha256 of sql" },
    ]);
    expect(await baselineProvider.check!(inputs, inputs)).toEqual({ inputs });
  });

  it("reads a dropped table as drift, so that the next `up` applies the baseline again", async () => {
    const inputs = baselineInputs(wh.target, wh.config);
    const { id, outs } = await baselineProvider.create(inputs);
    expect(await baselineProvider.read!(id, outs)).toEqual({ id, props: inputs });
    await wh.query("DROP TABLE staging.hub_export_watermark");
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      expect(await baselineProvider.read!(id, outs)).toEqual({ id: "" });
      expect(String(stderr.mock.calls[0][0])).toMatch(
        /tables missing in .*: staging\.hub_export_watermark; the next 'pulumi up' applies the baseline again/,
      );
    } finally {
      stderr.mockRestore();
    }
    await baselineProvider.create(inputs);
    expect(await tablesIn("staging")).toContain("hub_export_watermark");
  });

  it("reads a missing column as drift: the next `up` applies the baseline again, and fails unless it adds the column", async () => {
    const inputs = baselineInputs(wh.target, wh.config);
    const { id, outs } = await baselineProvider.create(inputs);
    await wh.query("ALTER TABLE staging.hub_export_watermark DROP COLUMN updated_at");
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    let drifted;
    try {
      drifted = await baselineProvider.read!(id, outs);
      expect(String(stderr.mock.calls[0][0])).toMatch(
        /columns missing in .*: staging\.hub_export_watermark\.updated_at; the next 'pulumi up' applies the baseline again/,
      );
    } finally {
      stderr.mockRestore();
    }
    expect(drifted).toEqual({ id, props: { ...inputs, missingColumns: ["staging.hub_export_watermark.updated_at"] } });
    expect(await baselineProvider.diff!(id, drifted.props!, inputs)).toEqual({ changes: true });

    // The same baseline cannot add it (CREATE TABLE IF NOT EXISTS): the update fails and says what to ship.
    const error = await baselineProvider.update!(id, drifted.props!, inputs).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /lack columns this project needs: staging\.hub_export_watermark\.updated_at\. .*new build-number baseline file with ALTER TABLE \.\.\. ADD COLUMN IF NOT EXISTS .*nothing was changed$/,
    );
    await expect(baselineProvider.create(inputs)).rejects.toThrow(
      /lack columns this project needs: staging\.hub_export_watermark\.updated_at/,
    );

    // A baseline that adds it with ALTER TABLE ... ADD COLUMN IF NOT EXISTS applies, and the drift is gone.
    const fixed = baselineInputs(
      wh.target,
      wh.config,
      `${inputs.sql}\nALTER TABLE staging.HUB_EXPORT_WATERMARK ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();\n`,
    );
    const updated = await baselineProvider.update!(id, drifted.props!, fixed);
    expect(updated.outs).toEqual(fixed);
    expect(await baselineProvider.read!(id, updated.outs)).toEqual({ id, props: fixed });
    expect(await missingBaselineColumns(wh.connection, inputs.tables)).toEqual([]);
  });

  it("the client's run tables: a client rename applies the new client's tables on update; delete leaves every table", async () => {
    const acme = runTablesInputs(wh.target, wh.config);
    const globex = runTablesInputs(wh.target, { ...wh.config, clientName: "GLOBEX" });
    expect(await baselineProvider.diff!("id", acme, { ...acme })).toEqual({ changes: false });
    expect(await baselineProvider.diff!("id", acme, globex)).toEqual({ changes: true });
    await baselineProvider.update!("id", acme, globex);
    expect(await tablesIn("staging")).toEqual(
      expect.arrayContaining([
        "hub_acme_messages_status",
        "hub_globex_messages",
        "hub_globex_messages_archive",
        "hub_globex_messages_status",
      ]),
    );
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      await baselineProvider.delete!("id", globex);
      expect(String(stderr.mock.calls[0][0])).toMatch(/^Hub_Client_Run_Tables_\d+: its tables stay in /);
    } finally {
      stderr.mockRestore();
    }
    expect(await tablesIn("staging")).toEqual(
      expect.arrayContaining(["hub_intake_job", "hub_acme_messages_status", "hub_globex_messages_status"]),
    );
  });

  it("leaves the tables in place on delete, and says so", async () => {
    const inputs = baselineInputs(wh.target, wh.config);
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      await baselineProvider.delete!("id", inputs);
      expect(String(stderr.mock.calls[0][0])).toMatch(/: its tables stay in .* \(never dropped by Pulumi\)/);
    } finally {
      stderr.mockRestore();
    }
    expect(await tablesIn("staging")).toContain("hub_intake_job");
  });
});

describe("first install only (procedure step 5.1): common tables that exist already are adopted", () => {
  let db: { url: string; drop(): Promise<void> };
  const qa = () => configFromEngine(fixtureStack("qa").config, "qa");
  /** The common schema's file as the plan gives it, with other SQL if given. */
  const common = (sql = renderCommonSchema(loadSqlBaseline(), qa())) => ({
    name: "Hub_Plat_Common_Schema_Baseline_test",
    sql,
    tables: commonSchemaTables("staging"),
  });
  const clientFile = (config: StackConfig = qa()) => ({
    name: "Hub_Client_Run_Tables_test",
    sql: renderBaseline(loadClientRunTables(), config),
    tables: clientRunTables("staging", config.clientName),
  });
  const query = async (sql: string, params: unknown[] = []) => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows;
    } finally {
      await client.end();
    }
  };
  beforeAll(async () => {
    db = await createTestDatabase("adopt");
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("adopts another pipeline's HUB_API_CONFIG and HUB_PLAT_CONFIG with extra columns, keeping their rows", async () => {
    // What another hub pipeline's common-schema baseline left: our columns and one of its own, and its rows.
    await query(`CREATE SCHEMA staging;
      CREATE TABLE staging.hub_api_config (hub_api_name text, hub_api_url text, hub_environment_name text, hub_region text, hub_tenant_id text, created_by text, PRIMARY KEY (hub_tenant_id, hub_api_name));
      CREATE TABLE staging.hub_plat_config (plat_region text, plat_client_name text, codebase text, gbl_or_us text, secure_view_source text, connector_id text, hub_destination text, hub_tenant_code text, hub_tenant_id text, PRIMARY KEY (plat_client_name, plat_region));
      INSERT INTO staging.hub_api_config VALUES ('ERS', 'https://hub-ext-x/ers/api/', 'hub-x', 'US', '00000000-0000-4000-8000-000000000001', 'other pipeline');
      INSERT INTO staging.hub_plat_config VALUES ('US', 'OTHER', 'US', 'US', NULL, NULL, 'HUB_MQ_US', 'OTHER_US', '00000000-0000-4000-8000-000000000001');`);
    const sql = renderCommonSchema(loadSqlBaseline(), qa());
    await applyBaseline(db.url, common(sql));
    expect(await query("SELECT hub_api_name, created_by FROM staging.hub_api_config")).toEqual([
      { hub_api_name: "ERS", created_by: "other pipeline" },
    ]);
    expect(await query("SELECT plat_client_name FROM staging.hub_plat_config")).toEqual([
      { plat_client_name: "OTHER" },
    ]);
    // The common tables it lacked are created (our own); no client's table comes with the common schema.
    expect(await missingBaselineTables(db.url, sql)).toEqual([]);
    expect(await missingBaselineColumns(db.url, commonSchemaTables("staging"))).toEqual([]);
    expect(
      await query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'staging' AND table_name LIKE '%messages%'",
      ),
    ).toEqual([]);
    // The client's run tables come from their own file, after the common schema.
    const runTables = clientFile();
    await applyBaseline(db.url, runTables);
    expect(await missingBaselineTables(db.url, runTables.sql)).toEqual([]);
  });

  it("creates every index of the run tables with the longest client name (42 characters), and replaces an earlier build's index names", async () => {
    const indexes = async (client: string) =>
      (
        await query(
          "SELECT indexname FROM pg_indexes WHERE schemaname = 'staging' AND tablename LIKE $1 AND indexname NOT LIKE '%pkey' AND indexname NOT LIKE '%\\_key' ORDER BY 1",
          [`hub_${client.toLowerCase()}_%`],
        )
      ).map((r) => r.indexname);
    const expected = (client: string) =>
      [
        "archive_tx_idx",
        "held_run_idx",
        "status_aside_idx",
        "status_emp_idx",
        "status_fail_idx",
        "status_held_idx",
        "status_tx_idx",
      ]
        .map((n) => `hub_${client.toLowerCase()}_${n}`)
        .sort();
    const long = `LONG_${"X".repeat(37)}`;
    expect(long).toHaveLength(42);
    const runTables = (clientName: string) => clientFile({ ...qa(), clientName });
    await applyBaseline(db.url, common());
    await applyBaseline(db.url, runTables(long));
    expect(await indexes(long)).toEqual(expected(long));

    // An install of the earlier build: its index names (truncated to 63 characters by PostgreSQL for a long client, where
    // one of them is the _ARCHIVE table's own name and was never created) go; the new ones stay, and so does the table.
    for (const client of ["OLDIDX", long]) {
      if (client === "OLDIDX") await applyBaseline(db.url, runTables(client));
      const c = client.toLowerCase();
      await query(`CREATE INDEX IF NOT EXISTS hub_${c}_messages_status_tx_idx ON staging.hub_${c}_messages_status (transaction_id, status);
        CREATE INDEX IF NOT EXISTS hub_${c}_messages_status_failed_idx ON staging.hub_${c}_messages_status (message_id) WHERE status = 'FAILED';
        CREATE INDEX IF NOT EXISTS hub_${c}_messages_archive_tx_idx ON staging.hub_${c}_messages_archive (transaction_id);`);
      expect((await indexes(client)).length).toBeGreaterThan(expected(client).length);
      await applyBaseline(db.url, runTables(client));
      expect(await indexes(client)).toEqual(expected(client));
      expect(await query(`SELECT to_regclass('staging.hub_${c}_messages_archive') IS NOT NULL AS table`)).toEqual([
        { table: true },
      ]);
    }
  });

  it("adopts a client's run tables that exist already (an earlier install), and refuses, naming the columns, when they lack some", async () => {
    const runTables = clientFile();
    await query(
      "INSERT INTO staging.hub_acme_messages_status (message_id, transaction_id, hub_tenant_id, hub_destination, status) VALUES (gen_random_uuid(), gen_random_uuid(), 't', 'HUB_MQ_US', 'PUBLISHED')",
    );
    await applyBaseline(db.url, runTables);
    expect(await query("SELECT count(*)::int AS n FROM staging.hub_acme_messages_status")).toEqual([{ n: 1 }]);

    // Another client's tables left by an older pipeline, without columns this project needs.
    const globex = clientFile({ ...qa(), clientName: "GLOBEX" });
    await query(
      "CREATE TABLE staging.hub_globex_messages_status (message_id uuid PRIMARY KEY, transaction_id uuid, status text)",
    );
    const error = await applyBaseline(db.url, globex).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^Hub_Client_Run_Tables_test: tables of .* exist already .* lack columns this project needs: staging\.hub_globex_messages_status\.hub_tenant_id, staging\.hub_globex_messages_status\.hub_destination, staging\.hub_globex_messages_status\.attempts, staging\.hub_globex_messages_status\.reason, staging\.hub_globex_messages_status\.updated_at\. .*nothing was changed$/,
    );
    // Nothing of it was applied: the client's other tables were not created.
    expect(await query("SELECT to_regclass('staging.hub_globex_messages') IS NULL AS absent")).toEqual([
      { absent: true },
    ]);
    // The common tables and the other client's are untouched.
    expect(await query("SELECT count(*)::int AS n FROM staging.hub_acme_messages_status")).toEqual([{ n: 1 }]);
    expect(await missingBaselineTables(db.url, renderCommonSchema(loadSqlBaseline(), qa()))).toEqual([]);
  });

  it("refuses, naming the missing columns, when an existing common table lacks what this project needs; nothing is changed", async () => {
    await query("DROP SCHEMA staging CASCADE");
    await query(`CREATE SCHEMA staging;
      CREATE TABLE staging.hub_api_config (hub_api_name text, hub_api_url text, hub_tenant_id text);`);
    const sql = renderCommonSchema(loadSqlBaseline(), qa());
    const error = await applyBaseline(db.url, common(sql)).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^Hub_Plat_Common_Schema_Baseline_test: tables of .* exist already \(created by another pipeline or an earlier install\) but lack columns this project needs: staging\.hub_api_config\.hub_environment_name, staging\.hub_api_config\.hub_region\. .*nothing was changed$/,
    );
    const tables = await query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'staging' ORDER BY 1",
    );
    expect(tables).toEqual([{ table_name: "hub_api_config" }]);
    // A baseline that adds them adopts the table.
    const fixed = `${sql}\nALTER TABLE staging.HUB_API_CONFIG ADD COLUMN IF NOT EXISTS hub_environment_name text;\nALTER TABLE staging.HUB_API_CONFIG ADD COLUMN IF NOT EXISTS hub_region text;\n`;
    await applyBaseline(db.url, common(fixed));
    expect(await missingBaselineColumns(db.url, commonSchemaTables("staging"))).toEqual([]);
  });

  it("refuses, naming them, NOT NULL columns without a default that this project never writes; nothing is changed", async () => {
    await query("DROP SCHEMA staging CASCADE");
    await applyBaseline(db.url, common());
    // Another pipeline's status table: our columns, and one of its own that every insert of ours would leave null.
    await query(`CREATE TABLE staging.hub_acme_messages_status (message_id uuid PRIMARY KEY, transaction_id uuid NOT NULL, hub_tenant_id text NOT NULL,
      hub_destination text NOT NULL, status text NOT NULL, attempts integer NOT NULL DEFAULT 0, reason text, updated_at timestamptz NOT NULL DEFAULT now(),
      batch_no integer NOT NULL, note text NOT NULL DEFAULT '', seq_id bigint GENERATED ALWAYS AS IDENTITY)`);
    const runTables = clientFile();
    const error = await applyBaseline(db.url, runTables).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^Hub_Client_Run_Tables_test: tables of .* with NOT NULL columns that have no default and that this project never writes: staging\.hub_acme_messages_status\.batch_no\. .*nothing was changed$/,
    );
    expect(await query("SELECT to_regclass('staging.hub_acme_messages') IS NULL AS absent")).toEqual([
      { absent: true },
    ]);
    await query("ALTER TABLE staging.hub_acme_messages_status ALTER COLUMN batch_no SET DEFAULT 0");
    await applyBaseline(db.url, runTables);
    expect(await missingBaselineTables(db.url, runTables.sql)).toEqual([]);
  });

  it("moves the bodies of a queue created before it held ids only to _ARCHIVE, and drops the columns it no longer has", async () => {
    await query("DROP SCHEMA staging CASCADE");
    await applyBaseline(db.url, common());
    // The work queue as the first layout had it, with a message of a killed run still queued.
    await query(`CREATE TABLE staging.hub_acme_messages (message_id uuid NOT NULL PRIMARY KEY, transaction_id uuid NOT NULL, seq bigint NOT NULL,
      hub_tenant_id text NOT NULL, hub_destination text NOT NULL, country_code text NOT NULL, record_count integer NOT NULL CHECK (record_count > 0),
      employee_ids text[] NOT NULL, changed_through timestamp NOT NULL, body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (transaction_id, seq));
      INSERT INTO staging.hub_acme_messages VALUES ('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000aa', 1, 't', 'HUB_MQ_US', 'US', 1, '{E1}', '2026-11-01', '{"header":{}}', now())`);
    const runTables = clientFile();
    await applyBaseline(db.url, runTables);
    expect(
      await query("SELECT message_id, body, employee_ids, archived_by FROM staging.hub_acme_messages_archive"),
    ).toEqual([
      {
        message_id: "00000000-0000-4000-8000-00000000000a",
        body: '{"header":{}}',
        employee_ids: ["E1"],
        archived_by: "00000000-0000-4000-8000-0000000000aa",
      },
    ]);
    // Still queued (the next run resumes it), without the columns the queue no longer has.
    expect(await query("SELECT message_id FROM staging.hub_acme_messages")).toEqual([
      { message_id: "00000000-0000-4000-8000-00000000000a" },
    ]);
    const columns = await query(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = 'staging' AND table_name = 'hub_acme_messages' ORDER BY ordinal_position",
    );
    expect(columns.map((r) => r.column_name)).toEqual(runTables.tables["staging.hub_acme_messages"]);
    // Applied again, it changes nothing.
    await applyBaseline(db.url, runTables);
    expect(await query("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive")).toEqual([{ n: 1 }]);
  });
  it("adopts the specification's three tables with exactly its columns, other clients' rows in them, and adds nothing to them", async () => {
    await query("DROP SCHEMA IF EXISTS staging CASCADE");
    // Another hub pipeline's common schema: only the specification's columns, its own types, no key, and its rows.
    await query(`CREATE SCHEMA staging;
      CREATE TABLE staging.hub_api_config (hub_api_name varchar(10), hub_api_url varchar(500), hub_environment_name varchar(100), hub_region varchar(10), hub_tenant_id varchar(36));
      CREATE TABLE staging.hub_plat_config (plat_region varchar(10), plat_client_name varchar(50), codebase varchar(10), gbl_or_us varchar(10), secure_view_source varchar(50), connector_id varchar(50), hub_destination varchar(100), hub_tenant_code varchar(50), hub_tenant_id varchar(36));
      CREATE TABLE staging.hub_intake_job (job_name varchar(200), transaction_id varchar(64));
      INSERT INTO staging.hub_api_config VALUES ('ERS', 'https://hub-ext-x/ers/api/', 'hub-x', 'US', '00000000-0000-4000-8000-000000000001');
      INSERT INTO staging.hub_plat_config VALUES ('US', 'OTHER', 'US', 'US', NULL, NULL, 'HUB_MQ_US', 'OTHER_US', '00000000-0000-4000-8000-000000000001');
      INSERT INTO staging.hub_intake_job VALUES ('OTHER_PIPELINE_JOB', 'job-4711');`);
    const shared = () =>
      query(`SELECT c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END AS d
               FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'staging' AND c.relname IN ('hub_api_config', 'hub_plat_config', 'hub_intake_job') AND a.attnum > 0
             UNION ALL SELECT 'constraint ' || conname FROM pg_constraint WHERE conrelid IN ('staging.hub_api_config'::regclass, 'staging.hub_plat_config'::regclass, 'staging.hub_intake_job'::regclass) AND contype <> 'n'
             UNION ALL SELECT 'index ' || indexname FROM pg_indexes WHERE schemaname = 'staging' AND tablename IN ('hub_api_config', 'hub_plat_config', 'hub_intake_job')
             UNION ALL SELECT 'row ' || t::text FROM staging.hub_api_config t UNION ALL SELECT 'row ' || t::text FROM staging.hub_plat_config t UNION ALL SELECT 'row ' || t::text FROM staging.hub_intake_job t
             ORDER BY 1`);
    const before = await shared();
    const sql = renderCommonSchema(loadSqlBaseline(), qa());
    await applyBaseline(db.url, common(sql), intakeJobWrittenWhenPresent("staging"));
    expect(await shared()).toEqual(before);
    expect(await missingBaselineTables(db.url, sql)).toEqual([]);
    expect(await missingBaselineColumns(db.url, commonSchemaTables("staging"))).toEqual([]);
  });

  it("adopts HUB_INTAKE_JOB of this project's earlier layout, whose NOT NULL columns the task writes; refuses other unwritten ones", async () => {
    await query("DROP SCHEMA IF EXISTS staging CASCADE");
    await query(`CREATE SCHEMA staging; CREATE TABLE staging.hub_intake_job (job_name text NOT NULL, transaction_id uuid NOT NULL PRIMARY KEY, plat_client_name text NOT NULL,
      status text NOT NULL, build_number text NOT NULL, started_at timestamptz NOT NULL, finished_at timestamptz NOT NULL, extracted_count integer NOT NULL DEFAULT 0, error text NULL)`);
    const sql = renderCommonSchema(loadSqlBaseline(), qa());
    // Without knowing what the task writes, its NOT NULL columns look unwritten.
    await expect(applyBaseline(db.url, common(sql))).rejects.toThrow(
      /never writes: staging\.hub_intake_job\.plat_client_name, staging\.hub_intake_job\.status, staging\.hub_intake_job\.build_number/,
    );
    await applyBaseline(db.url, common(sql), intakeJobWrittenWhenPresent("staging"));
    expect(await missingBaselineTables(db.url, sql)).toEqual([]);
    // A column the task does not know is still refused.
    await query("ALTER TABLE staging.hub_intake_job ADD COLUMN approved_by text NOT NULL");
    await expect(applyBaseline(db.url, common(sql), intakeJobWrittenWhenPresent("staging"))).rejects.toThrow(
      /never writes: staging\.hub_intake_job\.approved_by\./,
    );
    await query("DROP SCHEMA staging CASCADE");
  });
});
