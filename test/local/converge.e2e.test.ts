/**
 * `npm start` over time, like `pulumi up`: a hub tenant with its platform tenant, a platform tenant alone and a whole
 * region are added and removed in the stack config, with a run after each change; every run completes, and what is
 * gone leaves the config tables, tenant_credentials.txt and the connection records.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { parseDocument } from "yaml";
import { PROJECT_ROOT, runCli, runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { formatSummary } from "../../local/summary";

fs.mkdirSync(path.join(PROJECT_ROOT, ".tmp"), { recursive: true });
const work = fs.mkdtempSync(path.join(PROJECT_ROOT, ".tmp", "converge-"));
const dir = path.join(work, "state");
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const MX_TENANT = "5c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const EU_TENANT = "7a2d4f6b-8c1e-4a3b-b5d7-9e0f2a4c6e8b";
type Raw = Record<string, any>;

/** The qa fixture as a user edits a stack file: a copy (named for its stack) with `edit` applied to its config. */
function stackFile(name: string, edit: (config: Raw) => void = () => {}): string {
  const doc = parseDocument(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
  const config = doc.toJS().config as Raw;
  edit(config);
  const file = path.join(work, name, "Pulumi.qa.yaml");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  doc.set("config", config);
  fs.writeFileSync(file, doc.toString());
  return file;
}

const base = stackFile("base");
const withMexico = stackFile("mx", (c) => {
  c["hubExport:hubTenants"].push({
    hubTenantId: `PLACEHOLDER:${MX_TENANT}`,
    hubTenantCode: "ACME_MX_QA",
    hubRegion: "US",
    clientId: "PLACEHOLDER:acme-mx-qa-hrsys",
  });
  c["hubExport:platTenants"].push({ platRegion: "MX", codebase: "US", gblOrUs: "US", hubTenantCode: "ACME_MX_QA" });
});
const withoutCanada = stackFile("noca", (c) => {
  c["hubExport:platTenants"] = c["hubExport:platTenants"].filter((p: Raw) => p.platRegion !== "CA");
});
const withoutEurope = stackFile("noeu", (c) => {
  delete c["hubExport:hub"].regions.EU;
  delete c["hubExport:queues"].EU;
  c["hubExport:hubTenants"] = c["hubExport:hubTenants"].filter((t: Raw) => t.hubRegion !== "EU");
  c["hubExport:platTenants"] = c["hubExport:platTenants"].filter((p: Raw) => p.platRegion !== "EU");
});

async function start(file: string, extra: string[] = []): Promise<any> {
  const r = await runCli(
    ["local", "--json", "--employees", "90", "--changes", "9", "--file", file, "--dir", dir, ...extra],
    { timeoutMs: 240_000 },
  );
  const summary = JSON.parse(r.stdout);
  expect(summary.status, `${summary.reason}\n${r.stderr}`).toBe("ExecutionCompleted");
  expect(r.code).toBe(0);
  return summary;
}
const credentials = () =>
  JSON.parse(
    fs.readFileSync(path.join(dir, "bucket", "Tools", "hub_python_scripts", "tenant_credentials.txt"), "utf8"),
  ) as Record<string, string>;

describe("local mode converges like pulumi up", () => {
  it("a new state folder is private, and the first start completes with no psql line for a closed port", async () => {
    const first = await start(base);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, "secrets.json")).mode & 0o777).toBe(0o600);
    expect(first.seededRegions).toEqual(["US", "CA", "EU"]);
    // Without --keep the server is stopped once the summary shows: no URL to a closed port.
    expect(first.database).toMatchObject({ psqlUrl: null, psql: null });
    const text = await runCli(["local", "--file", base, "--dir", dir], { timeoutMs: 240_000 });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toContain("psql '");
    expect(text.stdout).toContain("npm start -- --keep' keeps it running");
  });

  it("a hub tenant with its platform tenant, added: its region gets sample employees, and they reach the hub", async () => {
    const s = await start(withMexico);
    expect(s.seededRegions).toEqual(["MX"]);
    // Its share of --employees 90 over the four platform regions.
    expect(s.seeded).toBe(23);
    expect(s.intakeJob.unknownCodes.fields).toEqual({});
    expect(Object.keys(credentials())).toContain(MX_TENANT);
    expect(s.routingRules[MX_TENANT]).toBeGreaterThan(0);
  });

  it("both removed: their rows and credential entry go, and the run completes (it was refused, then stopped, on every later start)", async () => {
    const s = await start(base);
    expect(s.removed).toMatchObject({
      hubTenantIds: [MX_TENANT],
      hubTenantCodes: { [MX_TENANT]: "ACME_MX_QA" },
      connections: [],
    });
    expect(formatSummary(s)).toContain(`Removed          hub tenant(s) ACME_MX_QA (${MX_TENANT}) (`);
    expect(s.removed.rows.sort()).toEqual([
      `hub_api_config/${MX_TENANT}/cfg`,
      `hub_api_config/${MX_TENANT}/ers`,
      `hub_api_config/${MX_TENANT}/hrsys`,
      "hub_plat_config/acme/mx",
    ]);
    expect(Object.keys(credentials())).not.toContain(MX_TENANT);
    // Again: nothing left to remove, and it still completes.
    expect((await start(base)).removed).toEqual({
      rows: [],
      hubTenantIds: [],
      hubTenantCodes: {},
      connections: [],
      messages: 0,
    });
  });

  it("a platform tenant removed, then added back", async () => {
    expect((await start(withoutCanada)).removed.rows).toEqual(["hub_plat_config/acme/ca"]);
    expect((await start(base)).removed.rows).toEqual([]);
  });

  it("a region removed: its queue connection record and its tenant go; added back, it runs again", async () => {
    const s = await start(withoutEurope);
    expect(s.removed.connections).toEqual(["HUB_MQ_EU_QA"]);
    expect(s.removed.hubTenantIds).toEqual([EU_TENANT]);
    expect(fs.existsSync(path.join(dir, "connections", "HUB_MQ_EU_QA.json"))).toBe(false);
    expect(Object.keys(credentials())).not.toContain(EU_TENANT);
    expect(Object.keys(s.regions)).toEqual(["US"]);
    const back = await start(base);
    expect(back.regions.EU.messages).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dir, "connections", "HUB_MQ_EU_QA.json"))).toBe(true);
  });

  it("status finds the job without --job-name: the stack names it", async () => {
    const r = await runMain(["status", "--file", base, "--dir", dir, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.jobName).toBe("HRSYS_EMPL_HUB_ACME_202611_QA");
    expect(status.intakeJobs.length).toBeGreaterThan(5);
  });

  it("an existing state folder keeps its mode", async () => {
    fs.chmodSync(dir, 0o750);
    await start(base);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o750);
  });
});
