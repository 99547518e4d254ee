/**
 * Onboarding a hub tenant or a platform tenant is one edit of the stack config. Compared with the plan before the
 * edit, the plan after it adds exactly the tenant's rows, its credential entry and its routing rules; a queue
 * connection and a publish step only when its region is new; and changes nothing else. Re-pointing a platform tenant
 * updates its one row; removing one removes its row; removing a region removes its publish step and its connection.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PlanRun, PlannedResource } from "../../components/planner";
import {
  editKey,
  getKey,
  fixtureStack,
  hubTenantFixture,
  platTenantFixture,
  type EngineConfigMap,
  type HubTenantFixture,
  type PlatTenantFixture,
} from "../fixtures/stacks";
import { inputs, ofType, planOf, resourceKeys } from "../fixtures/plan";

const TEMPLATE = /^hub-export-bucket\/pipelines\/hub_hrsys_export\/HRSYS_/;
const CREDENTIAL_ENTRIES = "hub-export-credential-files/Tools/hub_python_scripts/";
/** This stack's entries in the shared tenant_credentials.txt (providers/scriptFiles.ts). */
const CREDENTIALS_CHANGED = `pulumi-nodejs:dynamic/hubExport:ScriptFileEntries ${CREDENTIAL_ENTRIES}`;
/** The hub checklist lists every tenant: it changes with them. */
const checklist = (stack = "QA") =>
  ["md", "json"].map(
    (ext) =>
      `aws:s3/bucketObjectv2:BucketObjectv2 hub-export-hub-configuration/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_${stack}/HUB_CHECKLIST.${ext}`,
  );
const CHECKLIST = checklist();

interface Difference {
  added: string[];
  removed: string[];
  /** `type name` of resources whose inputs differ. */
  changed: string[];
}

function difference(before: PlanRun, after: PlanRun): Difference {
  const key = (r: PlannedResource) => `${r.type} ${r.name}`;
  const old = new Map(before.resources.map((r) => [key(r), r]));
  const now = new Map(after.resources.map((r) => [key(r), r]));
  return {
    added: [...now.keys()].filter((k) => !old.has(k)).sort(),
    removed: [...old.keys()].filter((k) => !now.has(k)).sort(),
    changed: [...now.keys()]
      .filter((k) => old.has(k) && JSON.stringify(inputs(old.get(k)!)) !== JSON.stringify(inputs(now.get(k)!)))
      .sort(),
  };
}

const byName = (run: PlanRun, name: string) => run.resources.find((r) => r.name === name)!;
const templateOf = (run: PlanRun) => JSON.parse(inputs(run.resources.find((r) => TEMPLATE.test(r.name))!).content);
const publishRegions = (run: PlanRun) =>
  templateOf(run)
    .tasks.find((t: { type: string }) => t.type === "PublishMessages")
    .steps.map((s: { region: string }) => s.region);
const tenantCredentials = (run: PlanRun) => inputs(byName(run, CREDENTIAL_ENTRIES)).entries as Record<string, string>;

const ROWS = "hub-export-config-tables/";
const PLAT_ROW = `pulumi-nodejs:dynamic/hubExport:ConfigRow ${ROWS}HUB_PLAT_CONFIG/`;
const hubTenantResources = (t: HubTenantFixture) =>
  [
    ...["ERS", "CFG", "HRSYS"].map(
      (api) => `pulumi-nodejs:dynamic/hubExport:ConfigRow ${ROWS}HUB_API_CONFIG/${t.hubTenantId}/${api}`,
    ),
    `pulumi-nodejs:dynamic/hubExport:RoutingRuleSet hub-export-hub-routing-rules/${t.hubTenantId}`,
  ].sort();
const platTenantResource = (p: PlatTenantFixture) => `${PLAT_ROW}${p.platRegion}`;

function withTenants(config: EngineConfigMap, hubs: HubTenantFixture[], plats: PlatTenantFixture[]): EngineConfigMap {
  const withHubs = editKey<HubTenantFixture[]>(config, "hubTenants", (list) => [...list, ...hubs]);
  return editKey<PlatTenantFixture[]>(withHubs, "platTenants", (list) => [...list, ...plats]);
}

describe("onboarding", () => {
  let qa: EngineConfigMap;
  let before: PlanRun;

  beforeAll(async () => {
    qa = fixtureStack("qa").config;
    before = await planOf(qa);
  });

  it("a hub tenant in a region already in use adds its rows, routing rules and credential entry, and nothing else", async () => {
    const hub = hubTenantFixture(42, "EU");
    const plat = platTenantFixture(42, hub);
    const after = await planOf(withTenants(qa, [hub], [plat]));
    const diff = difference(before, after);
    expect(diff.added).toEqual([...hubTenantResources(hub), platTenantResource(plat)].sort());
    expect(diff.removed).toEqual([]);
    expect(diff.changed).toEqual([CREDENTIALS_CHANGED, ...CHECKLIST].sort());

    // tenant_credentials.txt changes only by the new entry.
    const old = tenantCredentials(before);
    const now = tenantCredentials(after);
    expect(Object.keys(now).sort()).toEqual([...Object.keys(old), hub.hubTenantId].sort());
    for (const id of Object.keys(old)) expect(now[id]).toBe(old[id]);

    // Its rows point at the region's existing queue connection and carry the region's hub environment.
    const row = inputs(byName(after, `${ROWS}HUB_PLAT_CONFIG/${plat.platRegion}`));
    expect(row.key).toEqual({ plat_client_name: "ACME", plat_region: plat.platRegion });
    expect(row.values).toMatchObject({
      hub_destination: "HUB_MQ_EU_QA",
      hub_tenant_id: hub.hubTenantId,
      hub_tenant_code: hub.hubTenantCode,
    });
    expect(inputs(byName(after, `${ROWS}HUB_API_CONFIG/${hub.hubTenantId}/CFG`)).values).toEqual({
      hub_api_url: "https://hub-ext-qa-eu.hub.example.com/cfg/api/",
      hub_environment_name: "hub-qa-eu",
      hub_region: "EU",
    });
    expect(inputs(byName(after, `hub-export-hub-routing-rules/${hub.hubTenantId}`)).cfgApiUrl).toBe(
      "https://hub-ext-qa-eu.hub.example.com/cfg/api/",
    );
    expect(publishRegions(after)).toEqual(publishRegions(before));
  });

  it("a platform tenant feeding an existing hub tenant adds exactly its HUB_PLAT_CONFIG row", async () => {
    const us = getKey<HubTenantFixture[]>(qa, "hubTenants")[0];
    const plat = { platRegion: "MX", codebase: "US", gblOrUs: "US", hubTenantCode: us.hubTenantCode };
    const after = await planOf(withTenants(qa, [], [plat]));
    const diff = difference(before, after);
    expect(diff).toEqual({ added: [platTenantResource(plat)], removed: [], changed: [] });
    expect(inputs(byName(after, ROWS + "HUB_PLAT_CONFIG/MX")).values).toMatchObject({
      hub_tenant_id: us.hubTenantId,
      hub_destination: "HUB_MQ_US_QA",
    });
  });

  it("a hub tenant in a new region also adds the region's queue connection and publish step", async () => {
    const apac = {
      connectionName: "HUB_MQ_APAC_QA",
      baseUrl: "https://mq-ap-southeast-1.anypoint.example.com",
      queueName: "acme-empl-apac-qa",
      clientAccessId: "0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f",
      clientSecret: "apac-queue-secret",
    };
    const hub = hubTenantFixture(43, "APAC");
    const plat = platTenantFixture(43, hub);
    let config = editKey<Record<string, unknown>>(withTenants(qa, [hub], [plat]), "queues", (queues) => ({
      ...queues,
      APAC: apac,
    }));
    const apacHub = {
      environmentName: "hub-qa-apac",
      apis: {
        ERS: "https://hub-ext-qa-apac.hub.example.com/ers/api/",
        CFG: "https://hub-ext-qa-apac.hub.example.com/cfg/api/",
        HRSYS: "https://hub-ext-qa-apac.hub.example.com/hrsys/api/",
      },
    };
    config = editKey<{ regions: Record<string, unknown> }>(config, "hub", (h) => ({
      ...h,
      regions: { ...h.regions, APAC: apacHub },
    }));
    const after = await planOf(config);
    const diff = difference(before, after);
    expect(diff.added).toEqual(
      [
        ...hubTenantResources(hub),
        platTenantResource(plat),
        "aws:secretsmanager/secret:Secret hub-export-connections/HUB_MQ_APAC_QA",
        "aws:secretsmanager/secretVersion:SecretVersion hub-export-connections/HUB_MQ_APAC_QA",
      ].sort(),
    );
    expect(diff.removed).toEqual([]);
    // The rendered template gains the APAC publish step; the task role's policy gains the new record's ARN (the
    // task reads its records itself: the task definition and the execution role do not change); the dashboard
    // shows APAC.
    expect(diff.changed).toEqual(
      [
        CREDENTIALS_CHANGED,
        `aws:s3/bucketObjectv2:BucketObjectv2 ${before.resources.find((r) => TEMPLATE.test(r.name))!.name}`,
        "aws:iam/rolePolicy:RolePolicy hub-export-task-task-role",
        ...CHECKLIST,
        // The dashboard's per-region lines follow the hub regions in use.
        "aws:cloudwatch/dashboard:Dashboard hub-export-monitoring-dashboard",
      ].sort(),
    );
    expect(publishRegions(after)).toEqual(["US", "EU", "APAC"]);
    const step = templateOf(after).tasks.find((t: { type: string }) => t.type === "PublishMessages").steps[2];
    expect(step).toMatchObject({ region: "APAC", connection: "HUB_MQ_APAC_QA" });
    expect(inputs(byName(after, `${ROWS}HUB_PLAT_CONFIG/${plat.platRegion}`)).values.hub_destination).toBe(
      "HUB_MQ_APAC_QA",
    );
    expect(inputs(byName(after, `${ROWS}HUB_API_CONFIG/${hub.hubTenantId}/ERS`)).values).toEqual({
      hub_api_url: apacHub.apis.ERS,
      hub_environment_name: "hub-qa-apac",
      hub_region: "APAC",
    });
    const taskPolicy = JSON.parse(
      inputs(
        after.resources.find(
          (r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.name === "hub-export-task-task-role",
        )!,
      ).policy,
    );
    expect(taskPolicy.Statement.find((s: { Sid: string }) => s.Sid === "ReadConnectionRecords").Resource).toHaveLength(
      5,
    );
  });
});

describe("re-pointing and removing platform tenants", () => {
  it("re-pointing a platform tenant at another hub tenant updates its one row in place", async () => {
    const qa = fixtureStack("qa").config;
    const before = await planOf(qa);
    const [us, eu] = getKey<HubTenantFixture[]>(qa, "hubTenants");
    const plats = getKey<PlatTenantFixture[]>(qa, "platTenants");
    const ca = plats.find((p) => p.platRegion === "CA")!;
    expect(ca.hubTenantCode).toBe(us.hubTenantCode);
    const after = await planOf(
      editKey<PlatTenantFixture[]>(qa, "platTenants", (list) =>
        list.map((p) => (p.platRegion === "CA" ? { ...p, hubTenantCode: eu.hubTenantCode } : p)),
      ),
    );
    const diff = difference(before, after);
    expect(diff).toEqual({ added: [], removed: [], changed: [platTenantResource(ca)] });
    expect(inputs(byName(after, ROWS + "HUB_PLAT_CONFIG/CA"))).toMatchObject({
      key: { plat_client_name: "ACME", plat_region: "CA" },
      values: { hub_tenant_id: eu.hubTenantId, hub_tenant_code: eu.hubTenantCode, hub_destination: "HUB_MQ_EU_QA" },
    });
  });

  it("removing a platform tenant removes exactly its row; its hub tenant stays while another platform tenant feeds it", async () => {
    const qa = fixtureStack("qa").config;
    const before = await planOf(qa);
    const after = await planOf(
      editKey<PlatTenantFixture[]>(qa, "platTenants", (list) => list.filter((p) => p.platRegion !== "CA")),
    );
    expect(difference(before, after)).toEqual({ added: [], removed: [`${PLAT_ROW}CA`], changed: [] });
  });
});

describe("changing a hub tenant's hubTenantId", () => {
  it("renames its per-tenant resources and updates the HUB_PLAT_CONFIG rows that point at it in place", async () => {
    const qa = fixtureStack("qa").config;
    const before = await planOf(qa);
    const old = getKey<HubTenantFixture[]>(qa, "hubTenants")[1];
    const changed = { ...old, hubTenantId: "5b1e7c2a-9d4f-4a6b-8c3e-1f2a3b4c5d6e" };
    const after = await planOf(
      editKey<HubTenantFixture[]>(qa, "hubTenants", (list) => list.map((t, i) => (i === 1 ? changed : t))),
    );
    const diff = difference(before, after);
    expect(diff.added).toEqual(hubTenantResources(changed));
    expect(diff.removed).toEqual(hubTenantResources(old));
    // The hub checklist names the hub tenant by its id.
    expect(diff.changed).toEqual([CREDENTIALS_CHANGED, ...CHECKLIST, `${PLAT_ROW}EU`].sort());
    expect(inputs(byName(after, ROWS + "HUB_PLAT_CONFIG/EU"))).toMatchObject({
      key: { plat_client_name: "ACME", plat_region: "EU" },
      values: { hub_tenant_id: changed.hubTenantId },
    });
  });
});

describe("removing a region", () => {
  it("removes its publish step, its connection and its tenants, and keeps the other regions as they were", async () => {
    const prod = fixtureStack("prod").config;
    const before = await planOf(prod, "prod");
    const apacTenant = getKey<HubTenantFixture[]>(prod, "hubTenants").find((t) => t.hubRegion === "APAC")!;
    const apacPlats = getKey<PlatTenantFixture[]>(prod, "platTenants").filter(
      (p) => p.hubTenantCode === apacTenant.hubTenantCode,
    );
    let config = editKey<HubTenantFixture[]>(prod, "hubTenants", (tenants) =>
      tenants.filter((t) => t.hubRegion !== "APAC"),
    );
    config = editKey<PlatTenantFixture[]>(config, "platTenants", (list) =>
      list.filter((p) => p.hubTenantCode !== apacTenant.hubTenantCode),
    );
    config = editKey<Record<string, unknown>>(config, "queues", ({ APAC: _apac, ...rest }) => rest);
    const after = await planOf(config, "prod");
    const diff = difference(before, after);

    expect(publishRegions(before)).toEqual(["US", "EU", "APAC"]);
    expect(publishRegions(after)).toEqual(["US", "EU"]);
    expect(diff.added).toEqual([]);
    expect(diff.removed).toEqual(
      [
        ...hubTenantResources(apacTenant),
        ...apacPlats.map(platTenantResource),
        "aws:secretsmanager/secret:Secret hub-export-connections/HUB_MQ_APAC_PROD",
        "aws:secretsmanager/secretVersion:SecretVersion hub-export-connections/HUB_MQ_APAC_PROD",
      ].sort(),
    );
    expect(diff.changed).toEqual(
      [
        CREDENTIALS_CHANGED,
        `aws:s3/bucketObjectv2:BucketObjectv2 ${before.resources.find((r) => TEMPLATE.test(r.name))!.name}`,
        "aws:iam/rolePolicy:RolePolicy hub-export-task-task-role",
        ...checklist("PROD"),
        // The dashboard's per-region lines follow the hub regions in use.
        "aws:cloudwatch/dashboard:Dashboard hub-export-monitoring-dashboard",
      ].sort(),
    );
    expect(Object.keys(tenantCredentials(after))).not.toContain(apacTenant.hubTenantId);
    expect(ofType(after, "aws:secretsmanager/secret:Secret").map((s) => inputs(s).name)).not.toContain(
      "acme/prod/connection-strings/HUB_MQ_APAC_PROD",
    );
    expect(resourceKeys(after).length).toBe(resourceKeys(before).length - 7);
  });
});
