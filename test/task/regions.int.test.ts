/**
 * Regional hub environments and platform tenants: each hub tenant's HUB_API_CONFIG rows carry its own region's
 * environment, the task calls its region's ERS and HRSYS APIs (here a second emulator stands in for the EU hub), and
 * two platform regions feeding one hub tenant export under that one hub tenant, reported to HRSYS once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { emulatorConfig, TENANTS } from "../../bench/platform";
import { startEmulator, type Emulator } from "../../emulator";

describe("export task: regional hub environments, several platform tenants per hub tenant", () => {
  let f: ExportFixture;
  let euHub: Emulator;
  beforeAll(async () => {
    euHub = await startEmulator({ config: emulatorConfig() });
    [f] = await Promise.all([
      exportFixture({
        employees: 300,
        platRegions: ["US", "CA", "EU", "APAC"],
        platform: { regionalHubs: { EU: euHub.urls }, extraPlatRegions: { CA: "US" } },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => {
    await f?.close();
    await euHub?.close();
  });

  it("writes each hub tenant's region's environment into HUB_API_CONFIG and one HUB_PLAT_CONFIG row per platform region", async () => {
    const { rows: api } = await f.pool.query(
      `SELECT hub_tenant_id, hub_api_name, hub_api_url, hub_environment_name, hub_region FROM ${f.platform.stagingSchema}.hub_api_config ORDER BY 1, 2`,
    );
    const eu = api.filter((r) => r.hub_tenant_id === TENANTS.EU.hubTenantId);
    const us = api.filter((r) => r.hub_tenant_id === TENANTS.US.hubTenantId);
    expect(eu.map((r) => [r.hub_api_name, r.hub_api_url, r.hub_environment_name, r.hub_region])).toEqual([
      ["CFG", euHub.urls.cfg, "hub-test-eu", "EU"],
      ["ERS", euHub.urls.ers, "hub-test-eu", "EU"],
      ["HRSYS", euHub.urls.hrsys, "hub-test-eu", "EU"],
    ]);
    expect(us.map((r) => [r.hub_api_name, r.hub_api_url, r.hub_environment_name])).toEqual([
      ["CFG", f.emulator.urls.cfg, "hub-test"],
      ["ERS", f.emulator.urls.ers, "hub-test"],
      ["HRSYS", f.emulator.urls.hrsys, "hub-test"],
    ]);
    const { rows: plat } = await f.pool.query(
      `SELECT plat_region, hub_tenant_id FROM ${f.platform.stagingSchema}.hub_plat_config ORDER BY 1`,
    );
    expect(plat).toEqual([
      { plat_region: "CA", hub_tenant_id: TENANTS.US.hubTenantId },
      { plat_region: "EU", hub_tenant_id: TENANTS.EU.hubTenantId },
      { plat_region: "US", hub_tenant_id: TENANTS.US.hubTenantId },
    ]);
  });

  it("calls each hub tenant's own region's ERS and HRSYS APIs, and exports both platform regions of the US hub tenant", async () => {
    const { rows } = await f.pool.query<{ plat_region: string; n: number }>(
      `SELECT plat_region, count(*)::int AS n FROM ${f.platform.publishSchema}.employee GROUP BY 1`,
    );
    const per = Object.fromEntries(rows.map((r) => [r.plat_region, r.n]));
    expect(per.CA).toBeGreaterThan(0);
    const result = await runTask(f.platform.args);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);

    const us = f.emulator.state();
    const eu = euHub.state();
    // The US hub tenant is fed by US and CA; its hub is the default one. The EU tenant's calls all went to the EU hub.
    expect(us.ers[TENANTS.US.hubTenantId].entities).toBe(per.US + per.CA);
    expect(us.ers[TENANTS.EU.hubTenantId]).toBeUndefined();
    expect(eu.ers[TENANTS.EU.hubTenantId].entities).toBe(per.EU);
    expect(eu.ers[TENANTS.US.hubTenantId]).toBeUndefined();
    // HRSYS: STARTED and COMPLETED once per hub tenant, at its region's API, however many platform tenants feed it.
    expect(us.intakeJobs.map((j) => `${j.tenantId}:${j.status}`).sort()).toEqual([
      `${TENANTS.US.hubTenantId}:COMPLETED`,
      `${TENANTS.US.hubTenantId}:STARTED`,
    ]);
    expect(eu.intakeJobs.map((j) => `${j.tenantId}:${j.status}`).sort()).toEqual([
      `${TENANTS.EU.hubTenantId}:COMPLETED`,
      `${TENANTS.EU.hubTenantId}:STARTED`,
    ]);
    const { rows: archived } = await f.pool.query<{ hub_tenant_id: string; n: number }>(
      `SELECT hub_tenant_id, sum(record_count)::int AS n FROM ${f.t.archive} GROUP BY 1 ORDER BY 1`,
    );
    expect(Object.fromEntries(archived.map((r) => [r.hub_tenant_id, r.n]))).toEqual({
      [TENANTS.US.hubTenantId]: per.US + per.CA,
      [TENANTS.EU.hubTenantId]: per.EU,
    });
  });
});
