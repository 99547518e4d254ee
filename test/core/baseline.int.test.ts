import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "pg";
import { loadClientRunTables, loadSqlBaseline } from "../../templates";
import { renderBaseline, renderCommonSchema } from "../../core/baseline";
import { UserError } from "../../core/errors";
import { validateStackConfig } from "../../config/validate";
import { createTestDatabase } from "../support/database";
import { rawConfig } from "../support/rawConfig";

/** Everything the catalog says about a schema: columns, constraints, indexes. */
async function catalog(client: Client, schema: string): Promise<string[]> {
  const { rows } = await client.query(
    `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS d
       FROM information_schema.columns WHERE table_schema = $1
     UNION ALL
     SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = $1::regnamespace
     UNION ALL
     SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = $1
     ORDER BY 1`,
    [schema],
  );
  return rows.map((r) => r.d);
}

describe("the common-schema baseline and the client run tables", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: Client;
  const config = validateStackConfig(rawConfig(), { source: "test" });
  const sql = `${renderCommonSchema(loadSqlBaseline(), config)}\n${renderBaseline(loadClientRunTables(), config)}`;

  beforeAll(async () => {
    db = await createTestDatabase("baseline");
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it("creates the tables, and applying it twice gives no error and no change", async () => {
    await client.query(sql);
    const first = await catalog(client, "staging");
    await client.query(sql);
    const second = await catalog(client, "staging");
    expect(second).toEqual(first);
    const { rows } = await client.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'staging' ORDER BY 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        "hub_api_config",
        "hub_plat_config",
        "hub_intake_job",
        "hub_export_watermark",
        "hub_acme_messages",
        "hub_acme_messages_archive",
        "hub_acme_messages_status",
      ]),
    );
  });

  it("keeps the common schema free of client tags: it renders the same for every client of an environment", () => {
    const common = loadSqlBaseline();
    expect(common.text).not.toContain("<CLIENT_NAME_VALUE>");
    expect(
      renderCommonSchema(common, { ...config, clientName: "GLOBEX", jobName: "HRSYS_EMPL_HUB_GLOBEX_202611_QA" }),
    ).toBe(renderCommonSchema(common, config));
    const tagged = {
      name: "Hub_Plat_Common_Schema_Baseline_1",
      text: `${common.text}\nCREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_X (id int);\n`,
    };
    const error = (() => {
      try {
        return renderCommonSchema(tagged, config);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(
      /^Hub_Plat_Common_Schema_Baseline_1: the common schema must render the same for every client of an environment, but it uses <CLIENT_NAME_VALUE>: move .*\/Hub_Client_Run_Tables_<BuildNumber>\.sql\)$/,
    );
  });

  it("answers to upper- and lower-case names alike", async () => {
    await client.query(
      `INSERT INTO staging.HUB_API_CONFIG VALUES ('ERS', 'https://hub-ext-qa.example.com/ers/api/', 'hub-qa', 'US', '11111111-1111-4111-8111-111111111111')`,
    );
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM staging.hub_api_config`);
    expect(rows[0].n).toBe(1);
  });

  it("creates the specification's shared tables with exactly its columns, and no key, check or index of its own", async () => {
    // NOT NULL is in the columns' nullability (PostgreSQL 18 also lists it as a constraint).
    const shared = (await catalog(client, "staging")).filter(
      (d) =>
        /^(column|constraint|index) .*\b(hub_api_config|hub_plat_config|hub_intake_job)\b/.test(d) &&
        !/^constraint \S+ NOT NULL /.test(d),
    );
    expect(shared).toEqual([
      "column hub_api_config.hub_api_name text NO ",
      "column hub_api_config.hub_api_url text NO ",
      "column hub_api_config.hub_environment_name text NO ",
      "column hub_api_config.hub_region text NO ",
      "column hub_api_config.hub_tenant_id text NO ",
      "column hub_intake_job.job_name text NO ",
      "column hub_intake_job.transaction_id text NO ",
      "column hub_plat_config.codebase text NO ",
      "column hub_plat_config.connector_id text YES ",
      "column hub_plat_config.gbl_or_us text NO ",
      "column hub_plat_config.hub_destination text NO ",
      "column hub_plat_config.hub_tenant_code text NO ",
      "column hub_plat_config.hub_tenant_id text NO ",
      "column hub_plat_config.plat_client_name text NO ",
      "column hub_plat_config.plat_region text NO ",
      "column hub_plat_config.secure_view_source text YES ",
    ]);
    // Other pipelines' rows of other API kinds and regions are theirs to write: the tables do not refuse them.
    await client.query(
      `INSERT INTO staging.HUB_API_CONFIG VALUES ('OTHER_API', 'https://x/other', 'hub-qa', 'LATAM', 'not-a-uuid')`,
    );
  });
});
