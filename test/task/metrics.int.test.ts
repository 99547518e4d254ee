/**
 * The run's CloudWatch metrics: embedded-metric-format lines on the task's log, parsed back as CloudWatch Logs would
 * and checked against what the run recorded in the database.
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { JOB_NAME, QUEUES, TENANTS } from "../../bench/platform";
import {
  ALL_REGIONS,
  METRIC_NAMESPACE,
  METRICS,
  isEmfRecord,
  runMetricRecords,
  type EmfRecord,
} from "../../core/metrics";
import { countsPerRegion } from "../../task/metrics";

const FAST_RETRY = {
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "20",
  HUB_EXPORT_RETRY_ATTEMPTS: "3",
  HUB_EXPORT_CHUNK_SIZE: "200",
};

/** What CloudWatch Logs does with an EMF line: each metric's value, keyed by `name{dimension values}`. */
function extracted(records: EmfRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    for (const d of r._aws.CloudWatchMetrics) {
      expect(d.Namespace).toBe(METRIC_NAMESPACE);
      for (const dims of d.Dimensions) {
        for (const name of dims) expect(typeof r[name]).toBe("string");
        for (const m of d.Metrics) {
          expect(typeof r[m.Name]).toBe("number");
          out[`${m.Name}{${dims.map((k) => r[k]).join(",")}}`] = r[m.Name] as number;
        }
      }
    }
  }
  return out;
}

describe("export task: metrics in the embedded metric format", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 300, emulator: { rejectDestinations: [QUEUES.EU.queueName] } }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("a finished run writes one record per hub region and one for the run, matching its intake job", async () => {
    const result = await runTask(f.platform.args, FAST_RETRY);
    expect(result.code).toBe(3);
    const lines = result.stdout.split("\n").filter((l) => l.includes('"_aws"'));
    const records = lines.map((l) => JSON.parse(l) as unknown).filter(isEmfRecord);
    expect(records).toHaveLength(3);
    for (const r of records) {
      expect(r._aws.Timestamp).toBeGreaterThan(Date.now() - 120_000);
      expect(r._aws.Timestamp).toBeLessThanOrEqual(Date.now());
    }
    // An ExecutionFailed run has no HUB_INTAKE_JOB row: its counts are in its run history row.
    const { rows } = await f.pool.query(
      `SELECT detail FROM ${f.platform.stagingSchema}.HUB_EXPORT_RUN_HISTORY WHERE event = 'ExecutionFailed'`,
    );
    expect(rows).toHaveLength(1);
    const job = {
      published_count: rows[0].detail.published,
      failed_count: rows[0].detail.failed,
      ers_entity_count: rows[0].detail.ersEntities,
    };
    expect(job.failed_count).toBeGreaterThan(0);
    const { rows: perRegion } = await f.pool.query(
      `SELECT plat_region, count(*)::int AS n FROM ${f.platform.publishSchema}.employee WHERE plat_region IN ('US', 'EU') GROUP BY 1`,
    );
    const n = Object.fromEntries(perRegion.map((r) => [r.plat_region, r.n]));
    const key = (metric: string, region: string) => `${metric}{${JOB_NAME},${region}}`;
    expect(extracted(records)).toEqual({
      [key(METRICS.published, "EU")]: 0,
      [key(METRICS.failed, "EU")]: n.EU,
      [key(METRICS.ersEntities, "EU")]: 0,
      [key(METRICS.published, "US")]: n.US,
      [key(METRICS.failed, "US")]: 0,
      [key(METRICS.ersEntities, "US")]: n.US,
      [key(METRICS.published, ALL_REGIONS)]: job.published_count,
      [key(METRICS.failed, ALL_REGIONS)]: job.failed_count,
      [key(METRICS.heldBack, ALL_REGIONS)]: 0,
      [key(METRICS.setAside, ALL_REGIONS)]: 0,
      [key(METRICS.ersEntities, ALL_REGIONS)]: job.ers_entity_count,
      [key(METRICS.duration, ALL_REGIONS)]: expect.any(Number),
      [key(METRICS.completed, ALL_REGIONS)]: 0,
      [key(METRICS.executionFailed, ALL_REGIONS)]: 1,
      [key(METRICS.stopped, ALL_REGIONS)]: 0,
      [key(METRICS.refused, ALL_REGIONS)]: 0,
    });
    const run = records.find((r) => r.Region === ALL_REGIONS)!;
    expect(run.Outcome).toBe("ExecutionFailed");
    expect(run._aws.CloudWatchMetrics[0].Metrics.find((m) => m.Name === METRICS.duration)?.Unit).toBe("Seconds");
    // Nothing secret rides along.
    for (const line of lines)
      for (const secret of [
        TENANTS.US.clientSecret,
        TENANTS.EU.clientSecret,
        QUEUES.US.clientSecret,
        QUEUES.EU.clientSecret,
      ])
        expect(line).not.toContain(secret);
    for (const line of lines) expect(line).not.toMatch(/password|postgres:\/\//i);
  });

  it("a stopped run reports its outcome and duration, and no counts (they are not final)", async () => {
    // A stack whose intake report stops the run when it fails (the default only records it), and a failing report.
    const definition = fs.readFileSync(f.platform.definitionFile, "utf8");
    const doc = JSON.parse(definition);
    fs.writeFileSync(
      f.platform.definitionFile,
      JSON.stringify({
        ...doc,
        hubContract: { ...doc.hubContract, intakeReport: { ...doc.hubContract.intakeReport, onFailure: "stop" } },
      }),
    );
    f.emulator.setFaults({ spec: "hrsys.intakeJobs:500=1", seed: 1 });
    try {
      const result = await runTask(f.platform.args, FAST_RETRY);
      expect(result.code).toBe(1);
      const records = result.events.filter(isEmfRecord);
      expect(records).toHaveLength(1);
      const values = extracted(records);
      expect(values[`${METRICS.stopped}{${JOB_NAME},${ALL_REGIONS}}`]).toBe(1);
      expect(values[`${METRICS.completed}{${JOB_NAME},${ALL_REGIONS}}`]).toBe(0);
      expect(Object.keys(values).some((k) => k.startsWith(METRICS.published))).toBe(false);
      expect(records[0].Outcome).toBe("Stopped");
      // The outcome is in the run history too, with the reason's first line.
      const { rows } = await f.pool.query(
        `SELECT transaction_id, actor, detail FROM ${f.platform.stagingSchema}.HUB_EXPORT_RUN_HISTORY WHERE event = 'Stopped'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].actor).toBe("export-task");
      expect(rows[0].transaction_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(rows[0].detail).toMatchObject({ phase: expect.any(String), reason: expect.stringMatching(/^[^\n]+$/) });
    } finally {
      f.emulator.setFaults({ spec: "", seed: 1 });
      fs.writeFileSync(f.platform.definitionFile, definition);
    }
  });
});

describe("metric records", () => {
  it("sum per region and set exactly one outcome", () => {
    const tenants = [
      { hubTenantId: "a", region: "US" as const },
      { hubTenantId: "b", region: "US" as const },
      { hubTenantId: "c", region: "APAC" as const },
    ];
    const regions = countsPerRegion(tenants, {
      extracted: 0,
      messages: 0,
      published: 0,
      failed: 0,
      heldBack: 0,
      setAside: 0,
      superseded: 0,
      retried: 0,
      ersEntities: 0,
      tenants: { a: { published: 2, failed: 1, entities: 2 }, b: { published: 3, failed: 0, entities: 3 } },
    });
    expect(regions).toEqual({
      US: { published: 5, failed: 1, heldBack: 0, setAside: 0, ersEntities: 5 },
      APAC: { published: 0, failed: 0, heldBack: 0, setAside: 0, ersEntities: 0 },
    });
    const finished = runMetricRecords({
      jobName: "J",
      outcome: "ExecutionCompleted",
      seconds: 2,
      regions,
      totals: { heldBack: 4, setAside: 2 },
      timestamp: 1,
    });
    expect(finished.map((r) => [r.Region, r[METRICS.published], r[METRICS.heldBack], r[METRICS.setAside]])).toEqual([
      ["APAC", 0, undefined, undefined],
      ["US", 5, undefined, undefined],
      [ALL_REGIONS, 5, 4, 2],
    ]);
    const records = runMetricRecords({ jobName: "J", outcome: "Refused", seconds: 0.5, timestamp: 1 });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      JobName: "J",
      Region: ALL_REGIONS,
      Outcome: "Refused",
      [METRICS.refused]: 1,
      [METRICS.completed]: 0,
      [METRICS.duration]: 0.5,
    });
  });
});
