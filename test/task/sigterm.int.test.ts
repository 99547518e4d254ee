/**
 * ECS stops the task with SIGTERM (and kills it stopTimeout later). The bundled task, sent SIGTERM in every phase of a
 * run: it takes no new work, lets its requests in flight finish, records their acknowledgements, writes a Stopped
 * run-history row with the reason SIGTERM and exits with the stopped code; the next run resumes and loses nothing,
 * and, since nothing acknowledged went unrecorded, sends nothing twice. A second SIGTERM, or the grace period's end,
 * exits at once; the run deadline stops a run the same way as SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, lastHistory, type ExportFixture } from "../support/exportFixture";
import {
  finalEvent,
  openedTransaction,
  startTask,
  taskBundle,
  type StartedTask,
  type TaskResult,
} from "../support/taskProcess";
import { QUEUES } from "../../bench/platform";
import { holdTable, sleep, taskSessionsGone } from "../support/database";

const ENV = {
  HUB_EXPORT_CHUNK_SIZE: "250",
  HUB_EXPORT_PUBLISH_CONCURRENCY: "2",
  HUB_EXPORT_ERS_CONCURRENCY: "2",
  HUB_EXPORT_STOP_GRACE_SECONDS: "20",
};

describe("export task: SIGTERM in every phase", () => {
  let f: ExportFixture;
  /** Employees exported over all runs: each transaction archives its own. */
  let exported: number;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        employees: 1500,
        seed: 31,
        parameters: { records_per_ers_request: 20 },
        emulator: { deduplicate: false },
      }),
      taskBundle(),
    ]);
    exported = await employeesInScope(f.pool, f.platform.publishSchema);
  });
  afterAll(async () => f?.close());

  const touch = async (n: number, salt: string) => {
    const r = await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE employee_id IN (SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region IN ('US', 'EU') ORDER BY md5(employee_id || $1) LIMIT $2)`,
      [salt, n],
    );
    exported += r.rowCount!;
  };
  /** SIGTERM once `ready` says so; the run must then stop cleanly, as stopped, and say where it was. */
  const stopped = async (task: StartedTask, phase: string | null): Promise<TaskResult> => {
    task.child.kill("SIGTERM");
    const r = await task.done;
    expect(r.signal).toBeNull();
    expect(r.code, r.stderr).toBe(1);
    expect(r.events.find((e) => e.event === "run.stopping")).toMatchObject({ reason: "SIGTERM" });
    expect(finalEvent(r)).toBe("run.stopped");
    expect(r.stderr).toMatch(/^run stopped: SIGTERM \(phase .+\)\nthe next run resumes the transaction\n$/);
    await taskSessionsGone(f.pool);
    const opened = r.events.find((e) => e.event === "run.open");
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      transaction_id: (opened?.transactionId as string) ?? null,
      detail: { phase, reason: "SIGTERM" },
    });
    return r;
  };
  /** What the queues hold: distinct messages and duplicate deliveries, both regions. */
  const queued = () => {
    const s = f.emulator.state();
    const q = [s.queues.US.destinations[QUEUES.US.queueName], s.queues.EU.destinations[QUEUES.EU.queueName]];
    return {
      distinct: (q[0]?.distinct ?? 0) + (q[1]?.distinct ?? 0),
      duplicates: (q[0]?.duplicates ?? 0) + (q[1]?.duplicates ?? 0),
    };
  };
  /** The next run, on a sane hub: it resumes and completes. */
  const resumes = async (transactionId?: string) => {
    f.emulator.setFaults("none");
    const task = await startTask(f.platform.args, ENV);
    const r = await task.done;
    expect(r.code, r.stderr).toBe(0);
    expect(finalEvent(r)).toBe("run.done");
    if (transactionId)
      expect(
        r.events.some((e) => e.transactionId === transactionId && (e.event === "run.open" || e.event === "run.report")),
      ).toBe(true);
    return r;
  };

  it("load: stops before opening a transaction", async () => {
    // The load reads HUB_PLAT_CONFIG: held, the run is still loading when SIGTERM arrives.
    const unlock = await holdTable(f.pool, `${f.platform.stagingSchema}.HUB_PLAT_CONFIG`);
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "run.start")).toBe(true);
    const done = stopped(task, null);
    // Unlocked once the run has taken the signal: it stops where it waits.
    expect(await task.waitFor((e) => e.event === "run.stopping")).toBe(true);
    await unlock();
    const r = await done;
    expect(r.events.some((e) => e.event === "run.open")).toBe(false);
    await resumes();
  });

  it("extract: the chunk being extracted is stored, the next run publishes it", async () => {
    await touch(600, "extract");
    // The extract starts by counting the employees: held there, the run is in phase EXTRACT.
    const unlock = await holdTable(f.pool, `${f.platform.publishSchema}.employee`);
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "run.open")).toBe(true);
    const done = stopped(task, "EXTRACT");
    expect(await task.waitFor((e) => e.event === "run.stopping")).toBe(true);
    await unlock();
    const r = await done;
    await resumes(openedTransaction(r));
  });

  it("publish: batches in flight finish and their acknowledgements are recorded; nothing is sent twice", async () => {
    await touch(600, "publish");
    f.emulator.setFaults("queue.publish:latency=40");
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const r = await stopped(task, "PUBLISH");
    // Fewer published than extracted: it stopped mid-way.
    const tx = openedTransaction(r);
    expect(await f.count(f.t.messages, `transaction_id = '${tx}'`)).toBeGreaterThan(0);
    await resumes(tx);
  });

  it("publish at the links' own concurrency (not pinned): the batches in flight finish before the run records its stop; nothing is sent twice", async () => {
    await touch(600, "unpinned");
    f.emulator.setFaults("queue.publish:latency=300");
    const { HUB_EXPORT_PUBLISH_CONCURRENCY: _pinned, ...unpinned } = ENV;
    const before = queued();
    const task = await startTask(f.platform.args, unpinned);
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const r = await stopped(task, "PUBLISH");
    expect(r.events.filter((e) => e.event === "publish.failed")).toEqual([]);
    // Every message the queues hold now is PUBLISHED in _STATUS: none was stored without its acknowledgement.
    const now = queued();
    expect(now.distinct - before.distinct).toBe(
      await f.count(f.t.status, `status = 'PUBLISHED' AND transaction_id = '${openedTransaction(r)}'`),
    );
    await resumes(openedTransaction(r));
    expect(queued().duplicates).toBe(before.duplicates);
  });

  it("ERS: requests in flight finish and their messages leave the queue; nothing is sent twice", async () => {
    await touch(600, "ers");
    // First a run that ERS stops (a hub failure), leaving the published messages queued for the ERS phase.
    f.emulator.setFaults("ers.entities:503=1");
    const failing = await (
      await startTask(f.platform.args, { ...ENV, HUB_EXPORT_RETRY_BUDGET_SECONDS: "1", HUB_EXPORT_RETRY_MAX_MS: "100" })
    ).done;
    expect(failing.code).toBe(1);
    expect(await lastHistory(f)).toMatchObject({ event: "Stopped", detail: { phase: "ERS" } });
    f.emulator.setFaults("ers.entities:latency=100");
    const before = f.emulator.state().faults.stats["ers.entities"].requests;
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "run.open" && e.phase === "ERS")).toBe(true);
    while (f.emulator.state().faults.stats["ers.entities"].requests < before + 3) await sleep(10);
    const r = await stopped(task, "ERS");
    expect(await f.count(f.t.messages)).toBeGreaterThan(0);
    await resumes(openedTransaction(r));
  });

  it("finish and report: the final HRSYS report is abandoned at the grace period; HUB_INTAKE_JOB gets the run's row only once the next run reported it", async () => {
    await touch(300, "report");
    f.emulator.setFaults("hrsys.intakeJobs:latency=4000");
    const task = await startTask(f.platform.args, { ...ENV, HUB_EXPORT_STOP_GRACE_SECONDS: "3" });
    const reports = () => f.emulator.state().faults.stats["hrsys.intakeJobs"].requests;
    expect(await task.waitFor((e) => e.event === "ers.done")).toBe(true);
    // SIGTERM once the final report is in flight (the hub holds it 4 s).
    const before = reports();
    while (reports() === before) await sleep(10);
    const r = await stopped(task, "REPORT");
    const tx = openedTransaction(r);
    expect(await f.count(f.t.intakeJob, `transaction_id = '${tx}'`)).toBe(0);
    await resumes(tx);
    expect(await f.count(f.t.intakeJob, `transaction_id = '${tx}'`)).toBe(1);
    expect(
      f.emulator
        .state()
        .intakeJobs.filter((j) => j.transactionId === tx)
        .map((j) => j.status),
    ).toContain("COMPLETED");
  });

  it("a second SIGTERM exits at once", async () => {
    await touch(200, "second");
    f.emulator.setFaults("queue.publish:silence=1");
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "run.open")).toBe(true);
    while (f.emulator.state().faults.stats["queue.publish"].requests === 0) await sleep(10);
    task.child.kill("SIGTERM");
    expect(await task.waitFor((e) => e.event === "run.stopping")).toBe(true);
    task.child.kill("SIGTERM");
    const r = await task.done;
    expect(r.code).toBe(1);
    // The second signal ended it, not the grace period of 20 s (its reason would say so); a hang is the test's timeout.
    expect(r.events.at(-1)).toMatchObject({ event: "run.stopped", reason: "SIGTERM, then SIGTERM again" });
    await taskSessionsGone(f.pool);
    await resumes(openedTransaction(r));
  });

  it("the grace period's end exits at once, even when the database does not answer", async () => {
    await touch(200, "grace");
    f.emulator.setFaults("queue.publish:latency=40");
    // The Stopped row waits for the run history table, held here: only the grace period ends the run.
    const task = await startTask(f.platform.args, { ...ENV, HUB_EXPORT_STOP_GRACE_SECONDS: "2" });
    expect(await task.waitFor((e) => e.event === "run.open")).toBe(true);
    const unlock = await holdTable(f.pool, f.t.runHistory);
    task.child.kill("SIGTERM");
    const r = await task.done;
    await unlock();
    expect(r.code).toBe(1);
    expect(r.events.at(-1)).toMatchObject({ event: "run.stopped", reason: "SIGTERM; the grace period of 2 s ended" });
    await taskSessionsGone(f.pool);
    await resumes(openedTransaction(r));
  });

  it("the run deadline stops a run as SIGTERM does, records why, and frees the lock for the next run", async () => {
    await touch(200, "deadline");
    f.emulator.setFaults("queue.publish:silence=1");
    const r = await (
      await startTask(f.platform.args, {
        ...ENV,
        HUB_EXPORT_RUN_DEADLINE_SECONDS: "2",
        HUB_EXPORT_STOP_GRACE_SECONDS: "3",
      })
    ).done;
    expect(r.code).toBe(1);
    expect(r.events.find((e) => e.event === "run.stopping")).toMatchObject({ reason: "run deadline of 2 s passed" });
    expect(await lastHistory(f)).toMatchObject({ event: "Stopped", detail: { reason: "run deadline of 2 s passed" } });
    // The next run takes the lock at once: it is not refused.
    await resumes(openedTransaction(r));
  });

  it("lost nothing, and sent nothing twice: every stop recorded what the hub had acknowledged", async () => {
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.run)).toBe(0);
    const { rows: archived } = await f.pool.query(
      `SELECT count(*)::int AS total, count(DISTINCT (transaction_id, e))::int AS distinct FROM ${f.t.archive}, unnest(employee_ids) e`,
    );
    expect(archived[0]).toEqual({ total: exported, distinct: exported });
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
    const s = f.emulator.state();
    const queues = [s.queues.US.destinations[QUEUES.US.queueName], s.queues.EU.destinations[QUEUES.EU.queueName]];
    expect(queues[0].distinct + queues[1].distinct).toBe(await f.count(f.t.archive));
    expect(queues[0].duplicates + queues[1].duplicates).toBe(0);
    const ers = Object.values(s.ers);
    expect(ers.reduce((n, t) => n + t.entities, 0)).toBe(exported);
    expect(ers.reduce((n, t) => n + t.duplicates, 0)).toBe(0);
  });
});
