/**
 * Onboarding a tenant is an edit of the stack config. Compared with the plan before the edit, the plan after it adds
 * exactly the tenant's rows, its credential entry and its routing rules; a queue connection and a publish step only
 * when its region is new; and changes nothing else. Removing a region removes its publish step and its connection.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PlanRun, PlannedResource } from "../../components/planner";
import { editKey, getKey, repoStack, tenantFixture, type EngineConfigMap, type TenantFixture } from "../fixtures/stacks";
import { inputs, ofType, planOf, resourceKeys } from "../fixtures/plan";

const TEMPLATE = /^hub-export-bucket\/templates\/hub_hrsys_export\/HRSYS_/;
const TENANT_CREDENTIALS = "hub-export-credential-files/Tools/hub_python_scripts/tenant_credentials.txt";

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
    changed: [...now.keys()].filter((k) => old.has(k) && JSON.stringify(inputs(old.get(k)!)) !== JSON.stringify(inputs(now.get(k)!))).sort(),
  };
}

const byName = (run: PlanRun, name: string) => run.resources.find((r) => r.name === name)!;
const templateOf = (run: PlanRun) => JSON.parse(inputs(run.resources.find((r) => TEMPLATE.test(r.name))!).content);
const publishRegions = (run: PlanRun) => templateOf(run).tasks.find((t: { type: string }) => t.type === "PublishMessages").steps.map((s: { region: string }) => s.region);
const tenantCredentials = (run: PlanRun) => JSON.parse(inputs(byName(run, TENANT_CREDENTIALS)).content) as Record<string, string>;

const tenantResources = (t: TenantFixture) =>
  [
    ...["ERS", "CFG", "HRSYS"].map((api) => `pulumi-nodejs:dynamic/hubExport:ConfigRow HUB_API_CONFIG/${t.hubTenantId}/${api}`),
    `pulumi-nodejs:dynamic/hubExport:ConfigRow HUB_PLAT_CONFIG/${t.platRegion}`,
    `pulumi-nodejs:dynamic/hubExport:RoutingRuleSet routingRules/${t.hubTenantId}`,
  ].sort();

function withTenant(config: EngineConfigMap, tenant: TenantFixture): EngineConfigMap {
  return editKey<TenantFixture[]>(config, "tenants", (tenants) => [...tenants, tenant]);
}

describe("onboarding a tenant", () => {
  let qa: EngineConfigMap;
  let before: PlanRun;

  beforeAll(async () => {
    qa = repoStack("qa").config;
    before = await planOf(qa);
  });

  it("in a region already in use adds its rows, routing rules and credential entry, and nothing else", async () => {
    const tenant = tenantFixture(42, "EU");
    const after = await planOf(withTenant(qa, tenant));
    const diff = difference(before, after);
    expect(diff.added).toEqual(tenantResources(tenant));
    expect(diff.removed).toEqual([]);
    expect(diff.changed).toEqual([`aws:s3/bucketObjectv2:BucketObjectv2 ${TENANT_CREDENTIALS}`]);

    // tenant_credentials.txt changes only by the new entry.
    const old = tenantCredentials(before);
    const now = tenantCredentials(after);
    expect(Object.keys(now).sort()).toEqual([...Object.keys(old), tenant.hubTenantId].sort());
    for (const id of Object.keys(old)) expect(now[id]).toBe(old[id]);

    // Its rows point at the region's existing queue connection.
    const plat = inputs(byName(after, `HUB_PLAT_CONFIG/${tenant.platRegion}`));
    expect(plat.values.hub_destination).toBe("HUB_MQ_EU_QA");
    expect(plat.values.plat_region).toBe(tenant.platRegion);
    expect(publishRegions(after)).toEqual(publishRegions(before));
  });

  it("in a new region also adds the region's queue connection and publish step", async () => {
    const apac = { connectionName: "HUB_MQ_APAC_QA", baseUrl: "https://mq-ap-southeast-1.anypoint.example.com", queueName: "acme-empl-apac-qa", clientAccessId: "0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f", clientSecret: "apac-queue-secret" };
    const tenant = tenantFixture(43, "APAC");
    const config = editKey<Record<string, unknown>>(withTenant(qa, tenant), "queues", (queues) => ({ ...queues, APAC: apac }));
    const after = await planOf(config);
    const diff = difference(before, after);
    expect(diff.added).toEqual(
      [
        ...tenantResources(tenant),
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
        `aws:s3/bucketObjectv2:BucketObjectv2 ${TENANT_CREDENTIALS}`,
        `aws:s3/bucketObjectv2:BucketObjectv2 ${before.resources.find((r) => TEMPLATE.test(r.name))!.name}`,
        "aws:iam/rolePolicy:RolePolicy hub-export-task-task-role",
        // The dashboard's per-region lines follow the hub regions in use.
        "aws:cloudwatch/dashboard:Dashboard hub-export-monitoring-dashboard",
      ].sort(),
    );
    expect(publishRegions(after)).toEqual(["US", "EU", "APAC"]);
    const step = templateOf(after).tasks.find((t: { type: string }) => t.type === "PublishMessages").steps[2];
    expect(step).toMatchObject({ region: "APAC", connection: "HUB_MQ_APAC_QA" });
    expect(inputs(byName(after, `HUB_PLAT_CONFIG/${tenant.platRegion}`)).values.hub_destination).toBe("HUB_MQ_APAC_QA");
    const taskPolicy = JSON.parse(inputs(after.resources.find((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.name === "hub-export-task-task-role")!).policy);
    expect(taskPolicy.Statement.find((s: { Sid: string }) => s.Sid === "ReadConnectionRecords").Resource).toHaveLength(5);
  });
});

describe("changing a tenant's hubTenantId", () => {
  it("keeps its HUB_PLAT_CONFIG resource (named by platform region) with a new key, and renames its per-tenant resources", async () => {
    const qa = repoStack("qa").config;
    const before = await planOf(qa);
    const old = getKey<TenantFixture[]>(qa, "tenants")[1];
    const changed = { ...old, hubTenantId: "5b1e7c2a-9d4f-4a6b-8c3e-1f2a3b4c5d6e" };
    const after = await planOf(editKey<TenantFixture[]>(qa, "tenants", (list) => list.map((t, i) => (i === 1 ? { ...t, hubTenantId: changed.hubTenantId } : t))));
    const diff = difference(before, after);

    const perTenant = (t: TenantFixture) => tenantResources(t).filter((r) => !r.includes("HUB_PLAT_CONFIG/"));
    // HUB_API_CONFIG rows and the routing rule set are keyed by tenant: new resources, the old ones deleted (no
    // unique constraint shared between the two ids).
    expect(diff.added).toEqual(perTenant(changed));
    expect(diff.removed).toEqual(perTenant(old));
    // The HUB_PLAT_CONFIG row is the same resource with a new key: the provider replaces it, deleting first.
    const platName = `HUB_PLAT_CONFIG/${old.platRegion}`;
    expect(diff.changed).toEqual([`aws:s3/bucketObjectv2:BucketObjectv2 ${TENANT_CREDENTIALS}`, `pulumi-nodejs:dynamic/hubExport:ConfigRow ${platName}`]);
    expect(inputs(byName(before, platName)).key).toEqual({ plat_client_name: "ACME", hub_tenant_id: old.hubTenantId });
    expect(inputs(byName(after, platName))).toMatchObject({ key: { plat_client_name: "ACME", hub_tenant_id: changed.hubTenantId }, values: inputs(byName(before, platName)).values, identityColumns: ["plat_region"] });
  });
});

describe("removing a region", () => {
  it("removes its publish step, its connection and its tenants, and keeps the other regions as they were", async () => {
    const prod = repoStack("prod").config;
    const before = await planOf(prod, "prod");
    const apacTenant = getKey<TenantFixture[]>(prod, "tenants").find((t) => t.hubRegion === "APAC")!;
    let config = editKey<TenantFixture[]>(prod, "tenants", (tenants) => tenants.filter((t) => t.hubRegion !== "APAC"));
    config = editKey<Record<string, unknown>>(config, "queues", ({ APAC: _apac, ...rest }) => rest);
    const after = await planOf(config, "prod");
    const diff = difference(before, after);

    expect(publishRegions(before)).toEqual(["US", "EU", "APAC"]);
    expect(publishRegions(after)).toEqual(["US", "EU"]);
    expect(diff.added).toEqual([]);
    expect(diff.removed).toEqual(
      [
        ...tenantResources(apacTenant),
        "aws:secretsmanager/secret:Secret hub-export-connections/HUB_MQ_APAC_PROD",
        "aws:secretsmanager/secretVersion:SecretVersion hub-export-connections/HUB_MQ_APAC_PROD",
      ].sort(),
    );
    expect(diff.changed).toEqual(
      [
        `aws:s3/bucketObjectv2:BucketObjectv2 ${TENANT_CREDENTIALS}`,
        `aws:s3/bucketObjectv2:BucketObjectv2 ${before.resources.find((r) => TEMPLATE.test(r.name))!.name}`,
        "aws:iam/rolePolicy:RolePolicy hub-export-task-task-role",
        // The dashboard's per-region lines follow the hub regions in use.
        "aws:cloudwatch/dashboard:Dashboard hub-export-monitoring-dashboard",
      ].sort(),
    );
    expect(Object.keys(tenantCredentials(after))).not.toContain(apacTenant.hubTenantId);
    expect(ofType(after, "aws:secretsmanager/secret:Secret").map((s) => inputs(s).name)).not.toContain("acme/prod/connection-strings/HUB_MQ_APAC_PROD");
    expect(resourceKeys(after).length).toBe(resourceKeys(before).length - 7);
  });
});
