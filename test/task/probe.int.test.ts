/**
 * `run --probe` (the container's view, through the task bundle) and `probe --stack` (in-process) against the
 * emulator: a complete hub passes and nothing is created; a hub without the assumed ERS and HRSYS paths fails until
 * the stack's hubContract says how to live without them; `--write` creates only marked test items.
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { QUEUES, TENANTS } from "../../bench/platform";
import { HUB_CONTRACT_DEFAULTS, type HubContract } from "../../core/hubContract";
import { probeFromStack } from "../../task/probe";
import { startEmulator } from "../../emulator";
import type { ProbeReport } from "../../task/probe/report";

describe("the probe", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 10 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  const probe = async (...extra: string[]) => {
    const r = await runTask([...f.platform.args, "--probe", ...extra]);
    if (extra.includes("--json") && !r.stdout) throw new Error(`no report (exit ${r.code}): ${r.stderr}`);
    return { ...r, report: extra.includes("--json") ? (JSON.parse(r.stdout) as ProbeReport) : undefined };
  };
  const check = (report: ProbeReport, endpoint: RegExp, check: RegExp) =>
    report.checks.find((c) => endpoint.test(c.endpoint) && check.test(c.check));
  const useContract = (contract: HubContract) => {
    const def = JSON.parse(fs.readFileSync(f.platform.definitionFile, "utf8"));
    fs.writeFileSync(f.platform.definitionFile, JSON.stringify({ ...def, hubContract: contract }, null, 2));
  };

  it("passes against a complete hub: authorizes per region, reads cfg, finds the ERS and HRSYS paths, creates nothing", async () => {
    const r = await probe("--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const report = r.report!;
    expect(report.passed).toBe(true);
    for (const region of ["US", "EU"]) {
      expect(check(report, new RegExp(`^queue ${region} `), /^authorize$/)).toMatchObject({
        verdict: "ok",
        required: true,
        result: expect.stringMatching(/^token issued/),
      });
      expect(check(report, new RegExp(`^queue ${region} `), /^destination$/)).toMatchObject({
        verdict: "ok",
        result: expect.stringMatching(/empty batch refused; nothing stored/),
      });
    }
    expect(check(report, /^CFG tenant ACME_US_TEST$/, /read routingRules/)).toMatchObject({ verdict: "ok" });
    expect(check(report, /^ERS tenant ACME_EU_TEST$/, /POST \/ers\/api\/entities/)).toMatchObject({
      verdict: "ok",
      result: expect.stringMatching(/HTTP 400: answers at the assumed path/),
    });
    expect(check(report, /^HRSYS tenant ACME_US_TEST$/, /POST \/hrsys\/api\/intakeJobs/)).toMatchObject({
      verdict: "ok",
    });
    expect(check(report, /^host 127\.0\.0\.1:/, /^dns$/)).toMatchObject({ verdict: "ok" });
    expect(check(report, /^host 127\.0\.0\.1:/, /^tls$/)).toMatchObject({ verdict: "skip", required: false });
    expect(report.checks.every((c) => typeof c.latencyMs === "number" || c.latencyMs === null)).toBe(true);
    // Read-only: the hub holds nothing new, and the database neither.
    const state = f.emulator.state();
    expect(state.queues.US.destinations[QUEUES.US.queueName]?.count ?? 0).toBe(0);
    expect(state).toMatchObject({ ers: {}, intakeJobs: [] });
    expect(await f.count(f.t.run)).toBe(0);

    const table = await probe();
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ENDPOINT\s+CHECK\s+RESULT\s+LATENCY\s+VERDICT$/);
    expect(table.stdout).toMatch(/probe passed: every required check is ok/);
    // No secret in what it prints.
    for (const secret of f.platform.secrets)
      expect(table.stdout.includes(secret) || r.stdout.includes(secret)).toBe(false);
  });

  it("fails against a hub without the assumed ERS and HRSYS paths, and passes once the stack's contract does without them", async () => {
    const port = Number(new URL(f.emulator.urls.base).port);
    const config = f.emulator.config;
    await f.emulator.close();

    f.emulator = await startEmulator({
      port,
      config: {
        queues: config.queues,
        tenants: config.tenants,
        missingEndpoints: ["ers.entities", "hrsys.intakeJobs"],
      },
    });

    const failing = await probe("--json");
    expect(failing.code).toBe(1);
    expect(failing.report!.passed).toBe(false);
    expect(check(failing.report!, /^ERS tenant/, /POST/)).toMatchObject({
      verdict: "FAIL",
      required: true,
      result: expect.stringMatching(
        /HTTP 404: the hub has no such endpoint; set hubExport:hubContract.ers.path, or turn the call off or make it best-effort/,
      ),
    });
    // The intake report is best-effort by default: a missing endpoint is a warning.
    expect(check(failing.report!, /^HRSYS tenant/, /POST/)).toMatchObject({ verdict: "warn", required: false });
    const table = await probe();
    expect(table.stdout).toMatch(/probe FAILED: 2 required check\(s\) did not pass/);

    useContract({
      ...HUB_CONTRACT_DEFAULTS,
      intakeReport: { ...HUB_CONTRACT_DEFAULTS.intakeReport, enabled: false },
      ers: { ...HUB_CONTRACT_DEFAULTS.ers, onFailure: "record" },
    });
    const passing = await probe("--json");
    expect(passing.code).toBe(0);
    expect(check(passing.report!, /^ERS tenant/, /POST/)).toMatchObject({ verdict: "warn", required: false });
    expect(check(passing.report!, /^HRSYS tenant/, /path/)).toMatchObject({
      verdict: "skip",
      result: expect.stringMatching(/turned off/),
    });
    useContract(HUB_CONTRACT_DEFAULTS);
  });

  it("--write creates one marked test message per queue, and a marked ERS entity and intake report per tenant", async () => {
    const port = Number(new URL(f.emulator.urls.base).port);
    const config = f.emulator.config;
    await f.emulator.close();

    f.emulator = await startEmulator({ port, config: { queues: config.queues, tenants: config.tenants } });

    const r = await probe("--write", "--json");
    expect(r.code).toBe(0);
    const state = f.emulator.state({ messages: true });
    for (const region of ["US", "EU"] as const) {
      const messages = state.queues[region].destinations[QUEUES[region].queueName].messages!;
      expect(messages).toHaveLength(1);
      expect(messages[0].messageId).toMatch(/^HUB-EXPORT-PROBE-/);
    }
    expect(Object.keys(state.ers).sort()).toEqual([TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId].sort());
    expect(
      Object.values(state.ers).every(
        (t) => t.entities === 1 && Object.keys(t.received!)[0].endsWith(" HUB-EXPORT-PROBE"),
      ),
    ).toBe(true);
    expect(state.intakeJobs.map((j) => j.jobName)).toEqual([
      expect.stringMatching(/_HUB_EXPORT_PROBE$/),
      expect.stringMatching(/_HUB_EXPORT_PROBE$/),
    ]);
  });

  it("probe --stack: the stack's tenants and hub URLs with the secrets of its stores, no database needed", async () => {
    const report = await probeFromStack(
      f.platform.config,
      { scripts: f.platform.scriptsDir, connections: f.platform.connectionsDir },
      { write: false },
    );
    expect(report.passed).toBe(true);
    expect(report.checks.some((c) => c.endpoint.startsWith("database"))).toBe(false);
    expect(report.checks.filter((c) => c.check === "authorize").map((c) => c.verdict)).toEqual(["ok", "ok"]);

    const missing = await probeFromStack(
      f.platform.config,
      { scripts: f.platform.scriptsDir, connections: fs.mkdtempSync(`${f.platform.dir}/empty-`) },
      { write: false },
    );
    expect(missing.passed).toBe(false);
    expect(missing.checks.filter((c) => c.check === "connection record")).toEqual([
      expect.objectContaining({
        endpoint: "queue US (HUB_MQ_US_TEST)",
        verdict: "FAIL",
        result: expect.stringMatching(/not in folder .* \(pulumi up creates it\)/),
      }),
      expect.objectContaining({ endpoint: "queue EU (HUB_MQ_EU_TEST)", verdict: "FAIL" }),
    ]);
  });
});
