import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { startTask, runTask, taskBundle } from "../support/taskProcess";
import { startRecordingProxy, type RecordingProxy } from "../support/recordingProxy";
import { QUEUES } from "../support/platform";
import { mulberry32 } from "../../emulator/faults";

describe("export task: killed with SIGKILL at random points, it resumes and loses nothing", () => {
  let f: ExportFixture;
  let proxy: RecordingProxy;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        employees: 6000,
        seed: 11,
        hub: async (emulator) => {
          proxy = await startRecordingProxy(emulator.urls.base);
          return proxy.urls;
        },
      }),
      taskBundle(),
    ]);
    // Slow publishing a little, so that kills land in every phase.
    f.emulator.setFaults("queue.publish:latency=10");
  });
  afterAll(async () => {
    await proxy?.close();
    await f?.close();
  });

  it("ends with every extracted employee published once and archived, and never republishes an acknowledged message", { timeout: 120_000 }, async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const env = { HUB_EXPORT_CHUNK_SIZE: "250", HUB_EXPORT_PUBLISH_CONCURRENCY: "4", HUB_EXPORT_ERS_CONCURRENCY: "2" };
    const random = mulberry32(20261122);
    const transactions = new Set<string>();
    let kills = 0;
    for (let i = 0; i < 8; i++) {
      const task = await startTask(f.platform.args, env);
      // Wait until the run opened, then a random while more.
      await task.waitFor((e) => e.event === "run.open");
      await new Promise((r) => setTimeout(r, 30 + Math.floor(random() * 700)));
      const killed = task.child.kill("SIGKILL");
      const result = await task.done;
      if (result.signal === "SIGKILL") kills++;
      else expect(killed).toBe(false); // it finished first
      const open = result.events.find((e) => e.event === "run.open");
      if (open) transactions.add(String(open.transactionId));
      // What is acknowledged now must never be PUT again.
      const { rows } = await f.pool.query<{ message_id: string }>(`SELECT message_id FROM ${f.t.status} WHERE status = 'PUBLISHED'`);
      const acknowledged = new Set(rows.map((r) => r.message_id));
      const mark = proxy.puts.length;
      (f as unknown as { marks: { mark: number; acknowledged: Set<string> }[] }).marks ??= [];
      (f as unknown as { marks: { mark: number; acknowledged: Set<string> }[] }).marks.push({ mark, acknowledged });
    }
    expect(kills).toBeGreaterThanOrEqual(5);

    const final = await runTask(f.platform.args, env);
    expect(final.stderr).toBe("");
    expect(final.code).toBe(0);

    for (const { mark, acknowledged } of (f as unknown as { marks: { mark: number; acknowledged: Set<string> }[] }).marks) {
      const republished = proxy.puts.slice(mark).filter((id) => acknowledged.has(id));
      expect(republished).toEqual([]);
    }
    // Every in-scope employee archived exactly once, nothing left behind, every message published.
    const { rows } = await f.pool.query(`SELECT count(DISTINCT e)::int AS distinct, count(*)::int AS total FROM ${f.t.archive}, unnest(employee_ids) e`);
    expect(rows[0]).toEqual({ distinct: inScope, total: inScope });
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.run)).toBe(0);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
    const state = f.emulator.state();
    const us = state.queues.US.destinations[QUEUES.US.queueName];
    const eu = state.queues.EU.destinations[QUEUES.EU.queueName];
    expect(us.count + eu.count).toBe(inScope);
    // Each archived message reached the broker under its one id.
    const stored = new Set((f.emulator.state({ messages: true }).queues.US.destinations[QUEUES.US.queueName].messages ?? []).map((m) => m.messageId));
    const { rows: usArchived } = await f.pool.query<{ message_id: string }>(`SELECT message_id FROM ${f.t.archive} WHERE hub_destination = 'HUB_MQ_US_TEST'`);
    expect(usArchived.every((r) => stored.has(r.message_id))).toBe(true);
    // The kills all worked on one transaction until it finished.
    const { rows: jobs } = await f.pool.query(`SELECT transaction_id, status, extracted_count FROM ${f.t.intakeJob}`);
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    expect(jobs.every((j) => j.status === "ExecutionCompleted")).toBe(true);
    expect(jobs.reduce((n, j) => n + j.extracted_count, 0)).toBe(inScope);
  });
});
