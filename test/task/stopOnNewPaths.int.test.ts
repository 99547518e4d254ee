/**
 * A clean stop (SIGTERM) on the paths of issue 21: the bad-row pre-pass, superseding, setting a message aside, and the
 * final report of a run that set one aside. The state stays consistent and the next run resumes it as if the run had
 * not stopped: no chunk is extracted after the stop, a superseded or set-aside message is not sent again, a refusal
 * counts once per run (resumed or not), the run history reports every bad row, and the run's MessagesSetAside metric
 * is raised when the next run completes it. Throughout, what the hub received under each transaction id is what
 * `status --transaction` lists.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  archivedEmployees,
  employeeIds,
  employeesInScope,
  exportFixture,
  lastHistory,
  storedMessages,
  type ExportFixture,
  statusOf,
} from "../support/exportFixture";
import {
  finalEvent,
  openedTransaction,
  runTask,
  startTask,
  taskBundle,
  type StartedTask,
  type TaskResult,
} from "../support/taskProcess";
import { holdTable, sleep, taskSessionsGone } from "../support/database";
import { ALL_REGIONS, METRICS, isEmfRecord } from "../../core/metrics";

const ENV = {
  HUB_EXPORT_CHUNK_SIZE: "10",
  HUB_EXPORT_PUBLISH_CONCURRENCY: "1",
  HUB_EXPORT_RETRY_ATTEMPTS: "2",
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "20",
  HUB_EXPORT_STOP_GRACE_SECONDS: "20",
};
/** Over the broker's 10 MB body limit: refused for good before it is sent. */
const TOO_WIDE = 11_000_000;

describe("export task: a stop on the paths of poison messages and bad rows", () => {
  let f: ExportFixture;
  /** W: its message is refused for good by every run. E: its failed message is superseded by a newer one. */
  let wide: string;
  let changed: string;
  const ids: { wide?: string; superseded?: string } = {};
  const transactions: string[] = [];

  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 40, seed: 41, parameters: { set_aside_after_runs: 3 } }),
      taskBundle(),
    ]);
    [wide, changed] = await employeeIds(f, 2);
  });
  afterAll(async () => f?.close());

  const emp = () => `${f.platform.publishSchema}.employee`;
  const touch = (employeeId: string) =>
    f.pool.query(`UPDATE ${emp()} SET changed_at = localtimestamp WHERE employee_id = $1`, [employeeId]);
  const statusById = async (messageId: string) =>
    (
      await f.pool.query(`SELECT status, refusals, transaction_id FROM ${f.t.status} WHERE message_id = $1`, [
        messageId,
      ])
    ).rows[0] as { status: string; refusals: number; transaction_id: string };
  const messageOf = async (employeeId: string, transactionId: string) =>
    (
      await f.pool.query<{ message_id: string }>(
        `SELECT message_id FROM ${f.t.archive} WHERE $1 = ANY(employee_ids) AND transaction_id = $2`,
        [employeeId, transactionId],
      )
    ).rows[0]?.message_id;
  /** `status --transaction` lists, for each run, exactly the messages the hub received under its id. */
  const listedAsReceived = async () => {
    const byTransaction = new Map<string, Set<string>>();
    for (const m of storedMessages(f)) {
      const tx = m.properties!.transactionId;
      expect(JSON.parse(m.body!).header.transactionId).toBe(tx);
      if (!byTransaction.has(tx)) byTransaction.set(tx, new Set());
      byTransaction.get(tx)!.add(m.messageId);
    }
    expect([...byTransaction.keys()].filter((tx) => !transactions.includes(tx))).toEqual([]);
    for (const tx of new Set(transactions)) {
      const r = await statusOf(f, "--transaction", tx, "--json");
      expect(r.code, r.stderr).toBe(0);
      const listed = JSON.parse(r.stdout) as { received: { messageId: string }[] };
      expect(listed.received.map((m) => m.messageId).sort(), tx).toEqual([...(byTransaction.get(tx) ?? [])].sort());
    }
  };
  /** SIGTERM; the run stops cleanly in `phase`, with a Stopped row. */
  const stopped = async (task: StartedTask, phase: string): Promise<TaskResult> => {
    task.child.kill("SIGTERM");
    const r = await task.done;
    expect(r.code, r.stderr).toBe(1);
    expect(finalEvent(r)).toBe("run.stopped");
    await taskSessionsGone(f.pool);
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      transaction_id: openedTransaction(r),
      detail: { phase, reason: "SIGTERM" },
    });
    transactions.push(openedTransaction(r));
    return r;
  };

  it("SIGTERM during the bad-row pre-pass: no chunk is extracted after the stop; the next run extracts everything", async () => {
    // The pre-pass reads the sub-entities' changed_at: held there, the run is past its open and before its first chunk.
    const unlock = await holdTable(f.pool, `${f.platform.publishSchema}.employee_address`);
    const task = await startTask(f.platform.args, ENV);
    try {
      // Until the run waits on the lock in the pre-pass (a run that never gets there is the test's timeout).
      for (;;) {
        const { rows } = await f.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'hub-export' AND wait_event_type = 'Lock' AND query LIKE '%changed_at > localtimestamp%'`,
        );
        if (rows[0].n > 0) break;
        await sleep(50);
      }
      task.child.kill("SIGTERM");
      expect(await task.waitFor((e) => e.event === "run.stopping")).toBe(true);
    } finally {
      await unlock();
    }
    const r = await task.done;
    expect(r.code, r.stderr).toBe(1);
    await taskSessionsGone(f.pool);
    const tx = openedTransaction(r);
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      transaction_id: tx,
      detail: { phase: "EXTRACT", reason: "SIGTERM" },
    });
    expect(await f.count(f.t.archive, `transaction_id = '${tx}'`), "messages extracted after the stop").toBe(0);

    const next = await runTask(f.platform.args, ENV);
    expect(next.code, next.stderr).toBe(0);
    expect(openedTransaction(next)).toBe(tx);
    expect(await archivedEmployees(f)).toBe(await employeesInScope(f.pool, f.platform.publishSchema));
    transactions.push(tx);
  });

  it("a stop after the extract superseded a failed message: the resumed run does not send it, counts a refusal once per run, and reports every bad row", async () => {
    // A row no chunk can hold (reported by the pre-pass), W too wide for the broker, E changed.
    await f.pool.query(
      `INSERT INTO ${emp()} SELECT '', first_name, last_name, preferred_name, email, country_code, plat_region, job_family, gender, worker_status, job_profile, hire_date, termination_date, is_active, changed_at FROM ${emp()} WHERE employee_id = $1`,
      [changed],
    );
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee_address SET line1 = repeat('x', $2::int), changed_at = localtimestamp WHERE address_id = $1 || '-A1'`,
      [wide, TOO_WIDE],
    );
    await touch(changed);
    // Run A: the queue refuses everything for now; W is refused for good (its first run).
    f.emulator.setFaults("queue.publish:503=1");
    const a = await runTask(f.platform.args, ENV);
    expect(a.code, a.stderr).toBe(3);
    transactions.push(openedTransaction(a));
    ids.wide = await messageOf(wide, openedTransaction(a));
    ids.superseded = await messageOf(changed, openedTransaction(a));
    expect(await statusById(ids.wide)).toMatchObject({ status: "FAILED", refusals: 1 });
    expect(await statusById(ids.superseded)).toMatchObject({ status: "FAILED" });

    // Run B: E changes again, so B's extract supersedes A's message of E; B stops once its extract is done.
    await touch(changed);
    f.emulator.setFaults("queue.publish:503=1,latency=200");
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "publish.failed" && e.messageId === ids.wide)).toBe(true);
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const b = await stopped(task, "PUBLISH");
    expect(b.events.some((e) => e.event === "extract.superseded" && e.messageId === ids.superseded)).toBe(true);
    expect(await statusById(ids.superseded)).toMatchObject({ status: "SUPERSEDED" });
    expect(await statusById(ids.wide)).toMatchObject({
      status: "FAILED",
      refusals: 2,
      transaction_id: openedTransaction(b),
    });

    // B resumed on a sane queue: A's superseded message is never sent; W's second refusal by B is not a third run's.
    f.emulator.setFaults("none");
    const resumed = await runTask(f.platform.args, ENV);
    expect(openedTransaction(resumed)).toBe(openedTransaction(b));
    expect(
      storedMessages(f).map((m) => m.messageId),
      "the superseded message reached the queue",
    ).not.toContain(ids.superseded);
    expect(await statusById(ids.superseded)).toMatchObject({ status: "SUPERSEDED" });
    expect(await statusById(ids.wide), "a resumed run counted its refusal twice").toMatchObject({
      status: "FAILED",
      refusals: 2,
    });
    expect(resumed.code, resumed.stderr).toBe(3);
    // The run history of B reports the row without an id though B's attempt that extracted did not finish.
    const history = await lastHistory(f);
    expect(history).toMatchObject({ event: "ExecutionFailed", transaction_id: openedTransaction(b) });
    expect(history.detail.badRows, "the resumed run's history lost the pre-pass's bad rows").toMatchObject({
      missingIds: { rows: 1 },
    });
    expect(resumed.events.find((e) => e.event === "extract.badRows" && e.kind === "missingIds")).toMatchObject({
      rows: 1,
    });
    await listedAsReceived();
  });

  it("a stop during the final report of a run that set a message aside: the next run completes it and raises its MessagesSetAside", async () => {
    // Run C: the third run to refuse W sets it aside; its final HRSYS report is slow and SIGTERM arrives meanwhile.
    f.emulator.setFaults("hrsys.intakeJobs:latency=4000");
    const task = await startTask(f.platform.args, { ...ENV, HUB_EXPORT_STOP_GRACE_SECONDS: "3" });
    const reports = () => f.emulator.state().faults.stats["hrsys.intakeJobs"].requests;
    expect(await task.waitFor((e) => e.event === "ers.done")).toBe(true);
    // SIGTERM once the final report is in flight (the hub holds it 4 s).
    const before = reports();
    while (reports() === before) await sleep(10);
    const c = await stopped(task, "REPORT");
    expect(c.events.some((e) => e.event === "publish.setAside" && e.messageId === ids.wide)).toBe(true);
    expect(await statusById(ids.wide!)).toMatchObject({ status: "SET_ASIDE", refusals: 3 });

    f.emulator.setFaults("none");
    const d = await runTask(f.platform.args, ENV);
    expect(d.code, d.stderr).toBe(0);
    expect(d.events.some((e) => e.event === "run.report" && e.transactionId === openedTransaction(c))).toBe(true);
    const runs = d.events.filter(isEmfRecord).filter((e) => e.Region === ALL_REGIONS);
    // C's record (completed now, one message set aside), then D's own.
    expect(runs.map((e) => [e.Outcome, e[METRICS.setAside], e[METRICS.completed]])).toEqual([
      ["ExecutionCompleted", 1, 1],
      ["ExecutionCompleted", 0, 1],
    ]);
    expect(await f.count(f.t.intakeJob, `transaction_id = '${openedTransaction(c)}'`)).toBe(1);
    transactions.push(openedTransaction(d));
    expect(await f.count(f.t.messages)).toBe(0);
    await listedAsReceived();
  });
});
