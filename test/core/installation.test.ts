import { describe, expect, it } from "vitest";
import { installationOf } from "../../core/installation";
import { loadPipelineTemplate, loadSqlSources } from "../../templates";
import { validateStackConfig } from "../../config/validate";
import { decodeCredentialsString } from "../../core/credentials";
import { defaultRoutingRules, canonicalRuleSet } from "../../core/routingRules";
import { parseAdditionalProperties, serializeConnectionRecord } from "../../core/connections";
import { rowName } from "../../core/rows";
import { rawConfig, TENANT_IDS } from "../support/rawConfig";

const sources = { template: loadPipelineTemplate(), ...loadSqlSources() };
const installation = (edit: (c: any) => void = () => {}, regions: ("US" | "EU" | "APAC")[] = ["US", "EU"]) => {
  const raw = rawConfig(regions);
  edit(raw);
  return installationOf(validateStackConfig(raw, { source: "test" }), sources);
};

describe("installationOf", () => {
  const p = installation();

  it("has one HUB_API_CONFIG row per API per hub tenant, with its own region's environment", () => {
    expect(p.rows.apiConfig).toHaveLength(6);
    expect(p.rows.apiConfig[0]).toEqual({
      table: "HUB_API_CONFIG",
      key: { hub_tenant_id: TENANT_IDS.US, hub_api_name: "ERS" },
      values: {
        hub_api_url: "https://hub-ext-qa-us.example.com/ers/api/",
        hub_environment_name: "hub-qa-us",
        hub_region: "US",
      },
    });
    expect(p.rows.apiConfig[5]).toEqual({
      table: "HUB_API_CONFIG",
      key: { hub_tenant_id: TENANT_IDS.EU, hub_api_name: "HRSYS" },
      values: {
        hub_api_url: "https://hub-ext-qa-eu.example.com/hrsys/api/",
        hub_environment_name: "hub-qa-eu",
        hub_region: "EU",
      },
    });
    expect(p.rows.apiConfig.map(rowName)).toEqual([
      `HUB_API_CONFIG/${TENANT_IDS.US}/ERS`,
      `HUB_API_CONFIG/${TENANT_IDS.US}/CFG`,
      `HUB_API_CONFIG/${TENANT_IDS.US}/HRSYS`,
      `HUB_API_CONFIG/${TENANT_IDS.EU}/ERS`,
      `HUB_API_CONFIG/${TENANT_IDS.EU}/CFG`,
      `HUB_API_CONFIG/${TENANT_IDS.EU}/HRSYS`,
    ]);
  });

  it("has one HUB_PLAT_CONFIG row per platform tenant, keyed by (plat_client_name, plat_region), with its hub tenant's queue as hub_destination", () => {
    const q = installation((c) =>
      c.platTenants.push({
        platRegion: "CA",
        codebase: "US",
        gblOrUs: "US",
        hubTenantCode: "ACME_US",
        connectorId: "conn-7",
      }),
    );
    expect(q.rows.platConfig).toEqual([
      {
        table: "HUB_PLAT_CONFIG",
        key: { plat_client_name: "ACME", plat_region: "US" },
        values: {
          codebase: "US",
          gbl_or_us: "US",
          secure_view_source: null,
          connector_id: null,
          hub_destination: "HUB_MQ_US",
          hub_tenant_code: "ACME_US",
          hub_tenant_id: TENANT_IDS.US,
        },
      },
      {
        table: "HUB_PLAT_CONFIG",
        key: { plat_client_name: "ACME", plat_region: "EU" },
        values: {
          codebase: "GBL",
          gbl_or_us: "GBL",
          secure_view_source: null,
          connector_id: null,
          hub_destination: "HUB_MQ_EU",
          hub_tenant_code: "ACME_EU",
          hub_tenant_id: TENANT_IDS.EU,
        },
      },
      {
        table: "HUB_PLAT_CONFIG",
        key: { plat_client_name: "ACME", plat_region: "CA" },
        values: {
          codebase: "US",
          gbl_or_us: "US",
          secure_view_source: null,
          connector_id: "conn-7",
          hub_destination: "HUB_MQ_US",
          hub_tenant_code: "ACME_US",
          hub_tenant_id: TENANT_IDS.US,
        },
      },
    ]);
    expect(q.rows.platConfig.map(rowName)).toEqual(["HUB_PLAT_CONFIG/US", "HUB_PLAT_CONFIG/EU", "HUB_PLAT_CONFIG/CA"]);
    // One hub tenant fed by two platform tenants: one set of API rows, one routing rule set, one credential entry.
    expect(q.rows.apiConfig).toHaveLength(6);
    expect(q.routingRules.map((r) => r.tenant.hubTenantCode)).toEqual(["ACME_US", "ACME_EU"]);
  });

  it("posts each hub tenant's routing rules to its own region's CFG API", () => {
    expect(p.routingRules.map((r) => r.cfgApiUrl)).toEqual([
      "https://hub-ext-qa-us.example.com/cfg/api/",
      "https://hub-ext-qa-eu.example.com/cfg/api/",
    ]);
  });

  it("has a queue connection record per region in use, as the specification lays it out", () => {
    const queues = p.connections.filter((c) => c.type === "MessageQueue");
    expect(queues.map((q) => q.systemName)).toEqual(["HUB_MQ_US", "HUB_MQ_EU"]);
    const us = JSON.parse(serializeConnectionRecord(queues[0]));
    expect(us).toEqual({
      systemName: "HUB_MQ_US",
      type: "MessageQueue",
      description: "Hub message queue for the US region (QA)",
      url: "https://mq-us.example.com/api/v1/organizations/",
      username: "mq-us-id",
      password: "mq-us-secret",
      additionalProperties: "authUrl=https://mq-us.example.com/api/v1/authorize;queueName=acme-empl-us",
    });
    expect(parseAdditionalProperties(us.additionalProperties)).toEqual({
      authUrl: "https://mq-us.example.com/api/v1/authorize",
      queueName: "acme-empl-us",
    });
    expect(p.connections.map((c) => c.type)).toEqual(["S3", "PostgreSQL", "MessageQueue", "MessageQueue"]);
    expect(JSON.parse(serializeConnectionRecord(p.connections[1]))).toMatchObject({
      systemName: "PLAT_WAREHOUSE",
      url: "postgres://db.example.com:5432/PLATDB",
      username: "hub_export_acme",
      password: "task-pw",
    });
  });

  it("contributes its connection name and its hub tenants' entries to the shared credential files", () => {
    expect(p.scriptFiles.warehouseConnection).toBe("PLAT_WAREHOUSE");
    expect(String(p.scriptFiles.tenantCredentials)).toBe("[secret]");
    const map = JSON.parse(p.scriptFiles.tenantCredentials.reveal());
    expect(Object.keys(map)).toEqual([TENANT_IDS.US, TENANT_IDS.EU]);
    expect(decodeCredentialsString(map[TENANT_IDS.EU])).toEqual({ clientId: "acme-eu", clientSecret: "secret-eu-Zx9" });
  });

  it("lists the bucket objects: folders, the tagged template, this job's rendered pipeline and the scripts folder", () => {
    expect(p.bucketObjects.map((o) => o.key)).toEqual([
      "templates/hub_hrsys_export/",
      "pipelines/hub_hrsys_export/",
      "Tools/hub_python_scripts/",
      `templates/hub_hrsys_export/${sources.template.fileName}`,
      "pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_ACME_202611_QA.Json",
      "Tools/hub_python_scripts/credentials_template.ini",
      "Tools/hub_python_scripts/tenant_credentials_template.txt",
    ]);
    expect(p.bucketObjects[3].content).toBe(sources.template.text);
    expect(p.bucketObjects[4].content).toBe(p.template.text);
    expect(p.definitionKey).toBe("pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_ACME_202611_QA.Json");
    // Another client's job has its own rendered pipeline; the template object is the same file.
    const other = installation((c) => ((c.clientName = "GLOBEX"), (c.jobName = "HRSYS_EMPL_HUB_GLOBEX_202611_QA")));
    expect(other.definitionKey).toBe("pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_GLOBEX_202611_QA.Json");
    expect(other.bucketObjects[3]).toEqual(p.bucketObjects[3]);
    expect(p.bucketObjects.filter((o) => o.shared).map((o) => o.key)).toEqual([
      "templates/hub_hrsys_export/",
      "pipelines/hub_hrsys_export/",
      "Tools/hub_python_scripts/",
      `templates/hub_hrsys_export/${sources.template.fileName}`,
      "Tools/hub_python_scripts/credentials_template.ini",
      "Tools/hub_python_scripts/tenant_credentials_template.txt",
    ]);
  });

  it("posts the specification's 8 rules by default, or the tenant's own list", () => {
    expect(p.routingRules.map((r) => r.rules)).toEqual([defaultRoutingRules(), defaultRoutingRules()]);
    expect(defaultRoutingRules()).toHaveLength(8);
    expect(defaultRoutingRules()[5]).toEqual({
      dataDomainCode: "EMPL",
      isDataMastered: 1,
      systemRoleCodeSource: "RDPR",
      systemRoleCodeTarget: "MDM",
      status: 1,
    });
    const custom = [
      {
        dataDomainCode: "EMPL",
        isDataMastered: 1,
        systemRoleCodeSource: "MDM",
        systemRoleCodeTarget: "ALL",
        status: 1,
      },
    ];
    const q = installation((c) => (c.hubTenants[1].routingRules = custom));
    expect(q.routingRules[1].rules).toEqual(custom);
    expect(canonicalRuleSet(q.routingRules[0].rules)).toBe(canonicalRuleSet(defaultRoutingRules()));
    expect(decodeCredentialsString(q.routingRules[0].credentialsString.reveal())).toEqual({
      clientId: "acme-us",
      clientSecret: "secret-us-Zx9",
    });
  });

  it("renders the common baseline for the staging schema, the client's run tables apart for the client", () => {
    expect(p.baseline.sql).toContain("CREATE TABLE IF NOT EXISTS staging.HUB_INTAKE_JOB");
    expect(p.baseline.sql).not.toContain("ACME");
    expect(p.runTables.sql).toContain("CREATE TABLE IF NOT EXISTS staging.HUB_ACME_MESSAGES_STATUS");
    for (const file of [p.baseline, p.runTables]) expect(file.sql).not.toMatch(/<[A-Z_]+>/);
    expect(p.baseline.name).toBe(`Hub_Plat_Common_Schema_Baseline_${p.baseline.buildNumber}`);
    expect(p.runTables.name).toBe(`Hub_Client_Run_Tables_${p.runTables.buildNumber}`);
    // Another client of the same environment: the same common schema, its own run tables.
    const other = installation((c) => (c.clientName = "GLOBEX"));
    expect(other.baseline).toEqual(p.baseline);
    expect(other.runTables.sql).toContain("CREATE TABLE IF NOT EXISTS staging.HUB_GLOBEX_MESSAGES_STATUS");
    expect(other.runTables.sql).not.toContain("ACME");
    expect(p.intakeJobQuery).toBe(
      "SELECT j.job_name, j.transaction_id, h.recorded_at AS finished_at, h.detail FROM staging.HUB_INTAKE_JOB j " +
        "LEFT JOIN staging.HUB_EXPORT_RUN_HISTORY h ON h.transaction_id::text = lower(j.transaction_id::text) AND h.event = 'ExecutionCompleted' " +
        "WHERE j.job_name = 'HRSYS_EMPL_HUB_ACME_202611_QA' ORDER BY finished_at DESC NULLS LAST; " +
        "-- in database PLATDB, schema-only names (staging.<table>): PLATDB.staging.<table>, the specification's <staging_schema>.<table>, is a cross-database reference PostgreSQL refuses (unquoted, PLATDB reads as platdb)",
    );
  });
});
