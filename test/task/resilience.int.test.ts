import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { FINAL_EVENTS, finalEvent, runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { QUEUES, TENANTS, emulatorConfig } from "../../bench/platform";
import { startEmulator } from "../../emulator";

const FAST_RETRY = {
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "50",
  HUB_EXPORT_RETRY_ATTEMPTS: "12",
  HUB_EXPORT_CHUNK_SIZE: "200",
};
const outputs: TaskResult[] = [];

describe("export task: faults and a permanently rejecting destination", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 900, emulator: { rejectDestinations: [QUEUES.EU.queueName], tokenTtlSeconds: 3600 } }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("a destination that rejects: every status recorded, ExecutionFailed, non-zero exit, nothing lost; the next run retries", async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const { rows: euRows } = await f.pool.query(
      `SELECT count(*)::int AS n FROM ${f.platform.publishSchema}.employee WHERE plat_region = 'EU'`,
    );
    const eu = euRows[0].n as number;
    const failed = await runTask(f.platform.args, FAST_RETRY);
    outputs.push(failed);
    expect(failed.code).toBe(3);
    expect(FINAL_EVENTS).toContain(finalEvent(failed));
    // HUB_INTAKE_JOB holds completed runs only (step 10 never finds a failed one); the outcome is in the history.
    expect(await f.count(f.t.intakeJob)).toBe(0);
    const { rows: history } = await f.pool.query(`SELECT transaction_id, event, actor, detail FROM ${f.t.runHistory}`);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({
      event: "ExecutionFailed",
      actor: "export-task",
      detail: { failed: eu, published: inScope - eu, extracted: inScope },
    });
    // The reason states the cause, grouped by queue and reason, with counts.
    expect(history[0].detail.error).toBe(
      `${eu} message(s) failed: ${eu} to queue EU (HUB_MQ_EU_TEST): broker: destination rejects messages; the next run retries them`,
    );
    const firstTx = history[0].transaction_id;
    // Every message of the run is archived; _STATUS says which were published: the EU ones FAILED with the reason.
    const { rows: reasons } = await f.pool.query(
      `SELECT reason, count(*)::int AS n FROM ${f.t.status} WHERE status = 'FAILED' GROUP BY reason`,
    );
    expect(reasons).toEqual([{ reason: "broker: destination rejects messages", n: eu }]);
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.archive)).toBe(inScope);
    expect(await f.count(f.t.archive, `archived_by = '${firstTx}'`)).toBe(inScope);
    expect(f.emulator.state().intakeJobs.filter((j) => j.status === "FAILED")).toHaveLength(2);

    // The destination accepts again (same port, no rejects): the next run publishes the failed messages, same ids.
    const { rows: failedIds } = await f.pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${f.t.status} WHERE status = 'FAILED' ORDER BY 1`,
    );
    const port = Number(new URL(f.emulator.urls.base).port);
    await f.emulator.close();
    f.emulator = await startEmulator({ port, config: emulatorConfig() });
    const retried = await runTask(f.platform.args, FAST_RETRY);
    outputs.push(retried);
    expect(retried.code).toBe(0);
    expect(retried.events.find((e) => e.event === "run.requeued")).toMatchObject({ messages: eu });
    const { rows: last } = await f.pool.query(
      `SELECT transaction_id, status, retried_count, published_count FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(last[0]).toMatchObject({ status: "ExecutionCompleted", retried_count: eu, published_count: eu });
    expect(await f.count(f.t.messages)).toBe(0);
    // Not archived twice: one row per message, the retried ones now archived by the run that published them.
    expect(await f.count(f.t.archive)).toBe(inScope);
    expect(await f.count(f.t.archive, `archived_by = '${last[0].transaction_id}'`)).toBe(eu);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(inScope);
    const { rows: events } = await f.pool.query(`SELECT event FROM ${f.t.runHistory} ORDER BY history_id`);
    expect(events.map((e) => e.event)).toEqual(["ExecutionFailed", "ExecutionCompleted"]);
    const stored = (f.emulator.state({ messages: true }).queues.EU.destinations[QUEUES.EU.queueName].messages ?? [])
      .map((m) => m.messageId)
      .sort();
    expect(stored).toEqual(failedIds.map((r) => r.message_id));
    const { rows: attempts } = await f.pool.query(
      `SELECT min(attempts)::int AS min FROM ${f.t.status} WHERE message_id = ANY($1::uuid[])`,
      [stored],
    );
    expect(attempts[0].min).toBeGreaterThanOrEqual(2);
  });

  it("never writes a secret to its output", async () => {
    // A refused run whose database password is wrong must not echo it either.
    outputs.push(
      await runTask(
        f.platform.args.map((a) => a),
        { PGPASSWORD: "unused" },
      ),
    );
    const forms = f.platform.secrets.flatMap((s) => [
      s,
      Buffer.from(s).toString("base64"),
      Buffer.from(s).toString("base64url"),
      encodeURIComponent(s),
    ]);
    expect(outputs.length).toBeGreaterThanOrEqual(3);
    for (const out of outputs) {
      const text = out.stdout + out.stderr;
      expect(text.length).toBeGreaterThan(0);
      for (const form of forms)
        expect(text.includes(form), `output holds a secret (${form.slice(0, 3)}...)`).toBe(false);
    }
  });
});

describe("export task: about 10% injected faults", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 5000, seed: 5 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("with about 10% faults (429, 503, resets before and after processing, token expiry, authorize failures) everyone is published", async () => {
    const n = await employeesInScope(f.pool, f.platform.publishSchema);
    f.emulator.setFaults({
      spec: "queue.publish:429=0.02,503=0.02,reset=0.02,resetAfter=0.02,tokenExpiry=0.02;queue.authorize:503=0.3;ers.entities:503=0.04,reset=0.03,resetAfter=0.03;hrsys.intakeJobs:429=0.1",
      seed: 5,
    });
    const result = await runTask(f.platform.args, FAST_RETRY);
    // No exit but the documented ones, and never without the final log line (an unhandled rejection has neither).
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(finalEvent(result)).toBe("run.done");
    const state = f.emulator.state();
    const injected = state.faults.stats["queue.publish"].injected;
    expect((injected["429"] ?? 0) + (injected["503"] ?? 0)).toBeGreaterThan(0);
    expect(injected.reset).toBeGreaterThan(0);
    expect(injected.resetAfter).toBeGreaterThan(0);
    expect(injected.tokenExpiry).toBeGreaterThan(0);
    expect(state.faults.stats["queue.authorize"].injected["503"]).toBeGreaterThan(0);
    const us = state.queues.US.destinations[QUEUES.US.queueName];
    const eu = state.queues.EU.destinations[QUEUES.EU.queueName];
    // Everyone published; the only duplicates are batches the broker stored without answering (resetAfter).
    expect(us.distinct + eu.distinct).toBe(n);
    expect(us.duplicates + eu.duplicates).toBeLessThanOrEqual(injected.resetAfter * 10);
    const ers = [TENANTS.US, TENANTS.EU].map((t) => state.ers[t.hubTenantId]);
    expect(ers[0].entities + ers[1].entities - ers[0].duplicates - ers[1].duplicates).toBe(n);
    expect(ers[0].duplicates + ers[1].duplicates).toBeLessThanOrEqual(
      state.faults.stats["ers.entities"].injected.resetAfter * 100,
    );
    const { rows } = await f.pool.query(
      `SELECT status, extracted_count, published_count FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(rows[0]).toEqual({ status: "ExecutionCompleted", extracted_count: n, published_count: n });
    const done = result.events.find((e) => e.event === "publish.done") as { reauthorizations: number };
    expect(done.reauthorizations).toBeGreaterThan(0);
  });
});
