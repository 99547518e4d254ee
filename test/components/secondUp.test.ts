/**
 * The second `up`: plan a stack, change one thing, plan again, and derive what the engine would do with each resource
 * from the two plans, the way it decides:
 *  - a dynamic resource (config row, baseline, run tables, routing rules): its provider's own diff, called on the two
 *    sets of inputs;
 *  - a @pulumi/postgresql Grant or DefaultPrivileges: any change replaces it (the upstream provider forces it);
 *  - a resource with replaceOnChanges: a change of those inputs replaces it;
 *  - anything else whose inputs differ: updated in place.
 * A replacement is create-first unless the resource (or its provider's diff) says delete-first.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PlanRun, PlannedResource } from "../../components/planner";
import { DYNAMIC_PROVIDER_KEY } from "../../components/planner/values";
import { configRowProvider } from "../../providers/sqlRows";
import { baselineProvider } from "../../providers/baseline";
import { routingRulesProvider } from "../../providers/routingRules";
import { loadClientRunTables, loadSqlBaseline } from "../../templates";
import { sha256Hex } from "../../providers/json";
import {
  editKey,
  getKey,
  hubTenantFixture,
  platTenantFixture,
  fixtureStack,
  type EngineConfigMap,
  type HubTenantFixture,
  type PlatTenantFixture,
} from "../fixtures/stacks";
import { inputs, planOf } from "../fixtures/plan";

type Step = "add" | "remove" | "update" | "replace";
interface Operation {
  step: Step;
  /** For a replacement: the old resource is deleted before the new one is created. */
  deleteFirst?: boolean;
}

const DYNAMIC_DIFF: Record<
  string,
  (olds: any, news: any) => Promise<{ changes?: boolean; replaces?: string[]; deleteBeforeReplace?: boolean }>
> = {
  "pulumi-nodejs:dynamic/hubExport:ConfigRow": (o, n) => configRowProvider.diff!("id", o, n),
  "pulumi-nodejs:dynamic/hubExport:SqlBaseline": (o, n) => baselineProvider.diff!("id", o, n),
  "pulumi-nodejs:dynamic/hubExport:ClientRunTables": (o, n) => baselineProvider.diff!("id", o, n),
  "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet": (o, n) => routingRulesProvider.diff!("id", o, n),
};
const ALWAYS_REPLACED = new Set([
  "postgresql:index/grant:Grant",
  "postgresql:index/defaultPrivileges:DefaultPrivileges",
]);

const keyOf = (r: PlannedResource) => `${r.type} ${r.name}`;
const plainInputs = (r: PlannedResource) => {
  const { [DYNAMIC_PROVIDER_KEY]: _code, ...rest } = inputs(r);
  return rest;
};

/** Every resource the second `up` touches, with what it does to it. */
async function secondUp(before: PlanRun, after: PlanRun): Promise<Record<string, Operation>> {
  const old = new Map(before.resources.map((r) => [keyOf(r), r]));
  const now = new Map(after.resources.map((r) => [keyOf(r), r]));
  const ops: Record<string, Operation> = {};
  for (const [key] of now) if (!old.has(key)) ops[key] = { step: "add" };
  for (const [key] of old) if (!now.has(key)) ops[key] = { step: "remove" };
  for (const [key, r] of now) {
    const o = old.get(key);
    if (!o || !r.custom) continue;
    const [olds, news] = [plainInputs(o), plainInputs(r)];
    const dynamic = DYNAMIC_DIFF[r.type];
    if (dynamic) {
      const diff = await dynamic(olds, news);
      if (diff.replaces?.length)
        ops[key] = {
          step: "replace",
          deleteFirst: diff.deleteBeforeReplace === true || r.options.deleteBeforeReplace === true,
        };
      else if (diff.changes) ops[key] = { step: "update" };
      continue;
    }
    if (JSON.stringify(olds) === JSON.stringify(news)) continue;
    const replacing =
      ALWAYS_REPLACED.has(r.type) ||
      (r.options.replaceOnChanges ?? []).some((p) => JSON.stringify(olds[p]) !== JSON.stringify(news[p]));
    ops[key] = replacing
      ? { step: "replace", deleteFirst: r.options.deleteBeforeReplace === true }
      : { step: "update" };
  }
  return ops;
}

const only = (ops: Record<string, Operation>, step: Step) =>
  Object.entries(ops)
    .filter(([, o]) => o.step === step)
    .map(([k]) => k)
    .sort();
const GRANT = "postgresql:index/grant:Grant hub-export-warehouse/grant/";
const ROW = "pulumi-nodejs:dynamic/hubExport:ConfigRow hub-export-config-tables/";
const RULES = "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet hub-export-hub-routing-rules/";
const TENANT_CREDENTIALS =
  "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries hub-export-credential-files/Tools/hub_python_scripts/";
const COMMON_BASELINE = "pulumi-nodejs:dynamic/hubExport:SqlBaseline hub-export-warehouse/common-schema-baseline";
const RUN_TABLES = "pulumi-nodejs:dynamic/hubExport:ClientRunTables hub-export-warehouse/client-run-tables";

let qa: EngineConfigMap;
let before: PlanRun;
beforeAll(async () => {
  qa = fixtureStack("qa").config;
  before = await planOf(qa);
});

describe("the second up", () => {
  it("a new baseline table: the baseline is applied again in place, the new table gets its own grant, no grant is replaced", async () => {
    const source = loadSqlBaseline();
    const text = `${source.text}\nCREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_NEW_TABLE (id bigint PRIMARY KEY);\n`;
    const after = await planOf(qa, "qa", { baseline: { ...source, text } });
    const ops = await secondUp(before, after);
    expect(ops).toEqual({
      [`${GRANT}staging/hub_export_new_table`]: { step: "add" },
      [COMMON_BASELINE]: { step: "update" },
    });
    const grant = after.resources.find((r) => keyOf(r) === `${GRANT}staging/hub_export_new_table`)!;
    expect(inputs(grant)).toMatchObject({
      objectType: "table",
      schema: "staging",
      objects: ["hub_export_new_table"],
      privileges: ["DELETE", "INSERT", "SELECT", "UPDATE"],
      role: "hub_export_acme_qa",
    });
    expect(grant.options.deleteBeforeReplace).toBe(true);
  });

  it("a new run table in the client's file: only the client's run tables are applied again, the new table gets its own grant after them", async () => {
    const source = loadClientRunTables();
    const text = `${source.text}\nCREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_NOTE (id bigint PRIMARY KEY);\n`;
    const after = await planOf(qa, "qa", { runTables: { ...source, text } });
    expect(await secondUp(before, after)).toEqual({
      [`${GRANT}staging/hub_acme_messages_note`]: { step: "add" },
      [RUN_TABLES]: { step: "update" },
    });
    const grant = after.resources.find((r) => keyOf(r) === `${GRANT}staging/hub_acme_messages_note`)!;
    expect(grant.dependsOn).toContain(after.resources.find((r) => keyOf(r) === RUN_TABLES)!.urn);
  });

  it("a stack deployed with the combined baseline (run tables in the common file): the common baseline is applied again, the run tables are adopted by their new resource, no grant changes", async () => {
    // The state such a stack has: one baseline resource whose SQL holds the common schema and the client's tables.
    const combined = `${inputs(before.resources.find((r) => keyOf(r) === COMMON_BASELINE)!).sql}\n${inputs(before.resources.find((r) => keyOf(r) === RUN_TABLES)!).sql}`;
    const deployed: PlanRun = {
      ...before,
      resources: before.resources
        .filter((r) => keyOf(r) !== RUN_TABLES)
        .map((r) =>
          keyOf(r) === COMMON_BASELINE
            ? { ...r, inputs: { ...r.inputs, sql: combined, sha256: sha256Hex(combined) } }
            : r,
        ),
    };
    const ops = await secondUp(deployed, before);
    // The grants keep their names and parent: nothing is revoked after being granted.
    expect(ops).toEqual({ [COMMON_BASELINE]: { step: "update" }, [RUN_TABLES]: { step: "add" } });
  });

  it("a task-role rename: a new role first, every grant replaced delete-first (REVOKE from the old role while it exists), the old role dropped last", async () => {
    const after = await planOf(
      editKey<any>(qa, "database", (db) => ({ ...db, task: { ...db.task, username: "hub_export_acme_qa2" } })),
    );
    const ops = await secondUp(before, after);
    const grants = after.resources
      .filter((r) => ALWAYS_REPLACED.has(r.type))
      .map(keyOf)
      .sort();
    expect(grants.length).toBeGreaterThan(10);
    expect(only(ops, "replace")).toEqual(
      [...grants, "postgresql:index/role:Role hub-export-warehouse/task-role"].sort(),
    );
    for (const key of grants) expect(ops[key], key).toEqual({ step: "replace", deleteFirst: true });
    expect(ops["postgresql:index/role:Role hub-export-warehouse/task-role"]).toEqual({
      step: "replace",
      deleteFirst: false,
    });
    for (const g of after.resources.filter((r) => ALWAYS_REPLACED.has(r.type)))
      expect(inputs(g).role).toBe("hub_export_acme_qa2");
    // The task's connection record names the new login; nothing else changes.
    expect(only(ops, "update")).toEqual([
      "aws:secretsmanager/secretVersion:SecretVersion hub-export-connections/PLAT_WAREHOUSE_QA",
    ]);
    expect(only(ops, "add")).toEqual([]);
    expect(only(ops, "remove")).toEqual([]);
  });

  it("a client rename: the old client's tables lose their grants, the new ones get theirs, no grant is replaced; its platform rows move delete-first", async () => {
    const after = await planOf({ ...qa, "hubExport:clientName": "GLOBEX" });
    const ops = await secondUp(before, after);
    const grantsOf = (step: Step) => only(ops, step).filter((k) => k.startsWith(GRANT));
    expect(grantsOf("add")).toEqual(
      [
        "hub_globex_messages",
        "hub_globex_messages_archive",
        "hub_globex_messages_status",
        "hub_globex_rows_held_back",
      ].map((t) => `${GRANT}staging/${t}`),
    );
    expect(grantsOf("remove")).toEqual(
      ["hub_acme_messages", "hub_acme_messages_archive", "hub_acme_messages_status", "hub_acme_rows_held_back"].map(
        (t) => `${GRANT}staging/${t}`,
      ),
    );
    expect(grantsOf("replace")).toEqual([]);
    expect(grantsOf("update")).toEqual([]);
    // The tables that stay keep their grants untouched: the task role keeps exactly what it needs.
    for (const t of ["hub_intake_job", "hub_api_config", "hub_plat_config", "hub_export_watermark"])
      expect(ops[`${GRANT}staging/${t}`], t).toBeUndefined();
    // The common schema renders the same for every client: untouched. The client's run tables are applied for the new
    // name (the old client's tables stay: retained, never dropped).
    expect(ops[COMMON_BASELINE]).toBeUndefined();
    expect(ops[RUN_TABLES]).toEqual({ step: "update" });
    // HUB_PLAT_CONFIG is keyed by the client: replaced, deleting the old client's row first.
    const platRows = Object.keys(ops).filter((k) => k.startsWith(`${ROW}HUB_PLAT_CONFIG/`));
    expect(platRows).toHaveLength(getKey<PlatTenantFixture[]>(qa, "platTenants").length);
    for (const k of platRows) expect(ops[k]).toEqual({ step: "replace", deleteFirst: true });
  });

  it("a password rotation with a tenant removal: the tenant's resources go, no SQL resource of the others changes, the provider gets the new password", async () => {
    const removed = getKey<HubTenantFixture[]>(qa, "hubTenants")[1];
    const removedPlats = getKey<PlatTenantFixture[]>(qa, "platTenants").filter(
      (p) => p.hubTenantCode === removed.hubTenantCode,
    );
    let config = editKey<any>(qa, "database", (db) => ({
      ...db,
      admin: { ...db.admin, password: "rotated-Admin-Pw9" },
    }));
    config = editKey<HubTenantFixture[]>(config, "hubTenants", (tenants) =>
      tenants.filter((t) => t.hubTenantId !== removed.hubTenantId),
    );
    config = editKey<PlatTenantFixture[]>(config, "platTenants", (plats) =>
      plats.filter((p) => p.hubTenantCode !== removed.hubTenantCode),
    );
    config = editKey<Record<string, unknown>>(config, "queues", ({ EU: _eu, ...rest }) => rest);
    config = editKey<{ regions: Record<string, unknown> }>(config, "hub", (h) => ({
      ...h,
      regions: Object.fromEntries(Object.entries(h.regions).filter(([r]) => r !== "EU")),
    }));
    const after = await planOf(config);
    const ops = await secondUp(before, after);
    expect(only(ops, "remove")).toEqual(
      expect.arrayContaining([
        ...["ERS", "CFG", "HRSYS"].map((api) => `${ROW}HUB_API_CONFIG/${removed.hubTenantId}/${api}`),
        ...removedPlats.map((p) => `${ROW}HUB_PLAT_CONFIG/${p.platRegion}`),
        `${RULES}${removed.hubTenantId}`,
      ]),
    );
    expect(only(ops, "replace")).toEqual([]);
    expect(only(ops, "add")).toEqual([]);
    // The rows that stay and the baseline see nothing of the rotation: their state holds no login.
    for (const key of only(ops, "update")) expect(key).not.toMatch(/hubExport:(ConfigRow|SqlBaseline|ClientRunTables)/);
    expect(only(ops, "update")).toEqual(
      expect.arrayContaining(["pulumi:providers:postgresql hub-export-warehouse", TENANT_CREDENTIALS]),
    );
  });

  it("a tenant in a new region: its rows, rules and queue connection are added, nothing is replaced, the SQL resources already there stay", async () => {
    const tenant = hubTenantFixture(44, "APAC");
    const plat = platTenantFixture(44, tenant);
    const apac = {
      connectionName: "HUB_MQ_APAC_QA",
      baseUrl: "https://mq-ap-southeast-1.anypoint.example.com",
      queueName: "acme-empl-apac-qa",
      clientAccessId: "0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f",
      clientSecret: "apac-queue-Pw1",
    };
    const apacHub = {
      environmentName: "hub-qa-apac",
      apis: {
        ERS: "https://hub-ext-qa-apac.hub.example.com/ers/api/",
        CFG: "https://hub-ext-qa-apac.hub.example.com/cfg/api/",
        HRSYS: "https://hub-ext-qa-apac.hub.example.com/hrsys/api/",
      },
    };
    let config = editKey<HubTenantFixture[]>(qa, "hubTenants", (tenants) => [...tenants, tenant]);
    config = editKey<PlatTenantFixture[]>(config, "platTenants", (plats) => [...plats, plat]);
    config = editKey<Record<string, unknown>>(config, "queues", (queues) => ({ ...queues, APAC: apac }));
    config = editKey<{ regions: Record<string, unknown> }>(config, "hub", (h) => ({
      ...h,
      regions: { ...h.regions, APAC: apacHub },
    }));
    const ops = await secondUp(before, await planOf(config));
    expect(only(ops, "add")).toEqual(
      [
        ...["ERS", "CFG", "HRSYS"].map((api) => `${ROW}HUB_API_CONFIG/${tenant.hubTenantId}/${api}`),
        `${ROW}HUB_PLAT_CONFIG/${plat.platRegion}`,
        `${RULES}${tenant.hubTenantId}`,
        "aws:secretsmanager/secret:Secret hub-export-connections/HUB_MQ_APAC_QA",
        "aws:secretsmanager/secretVersion:SecretVersion hub-export-connections/HUB_MQ_APAC_QA",
      ].sort(),
    );
    expect(only(ops, "replace")).toEqual([]);
    expect(only(ops, "remove")).toEqual([]);
    for (const key of only(ops, "update"))
      expect(key).not.toMatch(/hubExport:(ConfigRow|SqlBaseline|ClientRunTables|RoutingRuleSet)|postgresql:/);
  });

  it("a config-only change runs no Docker: the image build's inputs stay the same", async () => {
    const after = await planOf(editKey<any>(qa, "task", (task) => ({ ...task, cpu: 2048, memory: 4096 })));
    const ops = await secondUp(before, after);
    expect(ops["docker-build:index:Image hub-export-image"]).toBeUndefined();
    expect(ops["aws:ecs/taskDefinition:TaskDefinition hub-export-task"]).toEqual({ step: "update" });
    // A second plan of the same config changes nothing at all: no value differs from run to run.
    expect(await secondUp(before, await planOf(qa))).toEqual({});
  });
});
