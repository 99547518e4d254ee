import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { QUEUES, TENANTS, JOB_NAME } from "../../bench/platform";
import { touchEmployees } from "../../task/model/sampleData";

describe("export task: a full run, then an incremental one", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 600 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("publishes every in-scope employee once, archives, records statuses, the intake job and watermarks", async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTask(f.platform.args, { HUB_EXPORT_CHUNK_SIZE: "100" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(await f.count(f.t.archive)).toBe(inScope);
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(inScope);
    expect(await f.count(f.t.run)).toBe(0);
    const { rows: jobs } = await f.pool.query(`SELECT * FROM ${f.t.completedRuns}`);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      job_name: JOB_NAME,
      status: "ExecutionCompleted",
      extracted_count: inScope,
      message_count: inScope,
      published_count: inScope,
      failed_count: 0,
      ers_entity_count: inScope,
    });
    const state = f.emulator.state();
    const us = state.queues.US.destinations[QUEUES.US.queueName];
    const eu = state.queues.EU.destinations[QUEUES.EU.queueName];
    expect(us.count + eu.count).toBe(inScope);
    expect(us.duplicates + eu.duplicates).toBe(0);
    expect(state.ers[TENANTS.US.hubTenantId].entities + state.ers[TENANTS.EU.hubTenantId].entities).toBe(inScope);
    expect(state.intakeJobs.map((j) => j.status).sort()).toEqual(["COMPLETED", "COMPLETED", "STARTED", "STARTED"]);
    expect(await f.count(f.t.watermark)).toBeGreaterThan(0);
    const { rows: history } = await f.pool.query(`SELECT transaction_id, event, detail FROM ${f.t.runHistory}`);
    expect(history).toEqual([
      {
        transaction_id: jobs[0].transaction_id,
        event: "ExecutionCompleted",
        detail: expect.objectContaining({
          extracted: inScope,
          published: inScope,
          failed: 0,
          buildNumber: jobs[0].build_number,
        }),
      },
    ]);
    // Every employee archived exactly once.
    const { rows } = await f.pool.query(
      `SELECT count(DISTINCT e)::int AS d, count(*)::int AS n FROM ${f.t.archive}, unnest(employee_ids) e`,
    );
    expect(rows[0]).toEqual({ d: inScope, n: inScope });
  });

  it("an incremental run exports only the employees changed since, including sub-entity changes", async () => {
    const touched = await touchEmployees(f.pool, { schema: f.platform.publishSchema, count: 40, seed: 3 });
    const { rows } = await f.pool.query<{ employee_id: string }>(
      `SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE employee_id = ANY($1) AND plat_region IN ('US','EU') ORDER BY 1`,
      [touched],
    );
    const expected = rows.map((r) => r.employee_id);
    expect(expected.length).toBeGreaterThan(10);
    const before = await f.count(f.t.archive);
    const result = await runTask(f.platform.args);
    expect(result.code).toBe(0);
    const { rows: latest } = await f.pool.query(
      `SELECT transaction_id, extracted_count FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(latest[0].extracted_count).toBe(expected.length);
    const { rows: archived } = await f.pool.query<{ e: string }>(
      `SELECT unnest(employee_ids) AS e FROM ${f.t.archive} WHERE transaction_id = $1 ORDER BY 1`,
      [latest[0].transaction_id],
    );
    expect(archived.map((r) => r.e)).toEqual(expected);
    expect(await f.count(f.t.archive)).toBe(before + expected.length);
    // A third run with nothing changed exports nothing and still completes.
    const idle = await runTask(f.platform.args);
    expect(idle.code).toBe(0);
    const { rows: third } = await f.pool.query(
      `SELECT extracted_count, status FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(third[0]).toEqual({ extracted_count: 0, status: "ExecutionCompleted" });
  });
});
