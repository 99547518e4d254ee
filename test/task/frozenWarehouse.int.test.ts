/**
 * A warehouse that stops answering (a stuck server, a connection dropped silently) ends a run within minutes at the
 * default settings, as a silent hub does: every statement has a deadline, the extraction's a longer one. The bundled
 * task, its sessions frozen mid-publish (SIGSTOP of its backends on a server of this test's own): it stops resumably
 * naming the warehouse and the phase, writes its Stopped row on a fresh session (or logs history.unrecorded once),
 * and the next run, once the sessions are thawed, completes with nothing lost. A warehouse that takes no more
 * acknowledgements (their table locked): the run records in its Stopped row which ones it could not record, `status`
 * says the next run sends them again, and it does, those and no others.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import {
  exportFixture,
  employeesInScope,
  lastHistory,
  statusOf,
  storedMessages,
  type ExportFixture,
} from "../support/exportFixture";
import { finalEvent, openedTransaction, startTask, taskBundle } from "../support/taskProcess";
import { sleep, taskSessionsGone } from "../support/database";
import { Client } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";
import { settingsFromEnv, stalledWarehouseSeconds } from "../../task/context";

describe("the statement deadlines' defaults", () => {
  it("bound a run whose warehouse stops answering to 5 minutes", () => {
    const settings = settingsFromEnv({});
    expect(settings.warehouseDeadline).toEqual({ seconds: 60, setting: "HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS" });
    expect(settings.extractDeadline).toEqual({ seconds: 120, setting: "HUB_EXPORT_EXTRACT_DEADLINE_SECONDS" });
    expect(stalledWarehouseSeconds(settings)).toBeLessThanOrEqual(5 * 60);
    // Raising a deadline raises the bound.
    expect(stalledWarehouseSeconds(settingsFromEnv({ HUB_EXPORT_EXTRACT_DEADLINE_SECONDS: "600" }))).toBe(690);
  });
});

describe("export task: a warehouse whose sessions freeze mid-publish", () => {
  const dataDir = path.join(os.tmpdir(), `frozen-${crypto.randomBytes(4).toString("hex")}`);
  let server: EmbeddedServer;
  let f: ExportFixture;
  /** Low deadlines and grace period, to keep the test short; the defaults are bounded above. */
  const ENV = {
    HUB_EXPORT_CHUNK_SIZE: "100",
    HUB_EXPORT_PUBLISH_CONCURRENCY: "2",
    HUB_EXPORT_ERS_CONCURRENCY: "2",
    HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS: "2",
    HUB_EXPORT_EXTRACT_DEADLINE_SECONDS: "4",
    HUB_EXPORT_STOP_GRACE_SECONDS: "12",
  };
  beforeAll(async () => {
    server = await startEmbeddedPostgres({ dataDir, persistent: false });
    [f] = await Promise.all([
      exportFixture({
        adminUrl: server.adminUrl,
        employees: 1500,
        seed: 35,
        parameters: { records_per_ers_request: 20 },
        emulator: { deduplicate: false },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => {
    await f?.close();
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("stops resumably naming the warehouse and the phase; the next run loses nothing", async () => {
    f.emulator.setFaults("queue.publish:latency=100");
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const publishes = () => f.emulator.state().faults.stats["queue.publish"].requests;
    const at = publishes();
    while (publishes() < at + 2) await sleep(10);
    const { rows } = await f.pool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hub-export'",
    );
    expect(rows.length).toBeGreaterThan(0);
    const frozen = rows.map((r) => r.pid);
    for (const pid of frozen) process.kill(pid, "SIGSTOP");
    // A hang guard only: a run the deadlines do not end is killed (and fails below with signal SIGKILL).
    const guard = setTimeout(() => task.child.kill("SIGKILL"), 120_000);
    let r;
    try {
      r = await task.done;
    } finally {
      clearTimeout(guard);
      for (const pid of frozen) process.kill(pid, "SIGCONT");
    }
    const db = new URL(f.db.url);
    const reason = `the warehouse (connection PLAT_WAREHOUSE_TEST, 127.0.0.1:${db.port}${db.pathname}) did not answer within 2 s (HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS): its session was given up`;
    expect(r.signal).toBeNull();
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^run stopped: .* \(phase PUBLISH\)\n/);
    expect(r.stderr.split("\n")[0]).toBe(`run stopped: ${reason} (phase PUBLISH)`);
    expect(r.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(r.events.find((e) => e.event === "run.stopping")).toMatchObject({ reason });
    expect(finalEvent(r)).toBe("run.stopped");
    expect(r.events.filter((e) => e.event === "run.stopped")).toHaveLength(1);
    // Its Stopped row, written on a fresh session, or (fresh sessions waiting on a frozen one's locks) said once.
    const unrecorded = r.events.filter((e) => e.event === "history.unrecorded");
    const last = await lastHistory(f);
    if (unrecorded.length === 0)
      expect(last).toMatchObject({
        event: "Stopped",
        transaction_id: openedTransaction(r),
        detail: { phase: "PUBLISH", reason },
      });
    else expect(unrecorded).toHaveLength(1);

    // Thawed, the frozen sessions end (their client is gone) and release the run lock: the next run completes.
    f.emulator.setFaults("none");
    const next = await (await startTask(f.platform.args, ENV)).done;
    expect(next.code, next.stderr).toBe(0);
    expect(next.events.find((e) => e.event === "run.open")).toMatchObject({
      transactionId: openedTransaction(r),
      resumed: true,
    });
    const exported = await employeesInScope(f.pool, f.platform.publishSchema);
    const { rows: archived } = await f.pool.query(
      `SELECT count(*)::int AS total, count(DISTINCT e)::int AS distinct FROM ${f.t.archive}, unnest(employee_ids) e`,
    );
    expect(archived[0]).toEqual({ total: exported, distinct: exported });
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
    // Nothing lost: every message on the hub, under its one messageId.
    const ids = new Set(storedMessages(f).map((m) => m.messageId));
    const { rows: all } = await f.pool.query<{ message_id: string }>(`SELECT message_id FROM ${f.t.archive}`);
    expect(all.filter((m) => !ids.has(m.message_id))).toEqual([]);
  });
});

describe("export task: acknowledgements the warehouse takes no more (their table locked) past the deadline", () => {
  let f: ExportFixture;
  const ENV = {
    HUB_EXPORT_CHUNK_SIZE: "100",
    HUB_EXPORT_PUBLISH_CONCURRENCY: "2",
    HUB_EXPORT_ERS_CONCURRENCY: "2",
    HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS: "2",
    HUB_EXPORT_STOP_GRACE_SECONDS: "12",
  };
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        employees: 1500,
        seed: 38,
        parameters: { records_per_ers_request: 20 },
        emulator: { deduplicate: false },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("records which it could not in its Stopped row; status says the next run sends them again, and it does", async () => {
    f.emulator.setFaults("queue.publish:latency=100");
    const task = await startTask(f.platform.args, ENV);
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const publishes = () => f.emulator.state().faults.stats["queue.publish"].requests;
    const at = publishes();
    while (publishes() < at + 2) await sleep(10);
    // Reads go on (the counts so far, the run history); writes of _STATUS wait.
    const holder = new Client({ connectionString: f.db.url });
    await holder.connect();
    await holder.query(`BEGIN; LOCK TABLE ${f.t.status} IN EXCLUSIVE MODE`);
    const r = await task.done;
    // The writes the task gave up end with its sessions: none commits once the lock is gone.
    await taskSessionsGone(f.pool);
    await holder.query("COMMIT");
    await holder.end();
    expect(r.code, r.stderr).toBe(1);
    expect(r.events.find((e) => e.event === "run.stopping")?.reason).toMatch(
      /did not answer within 2 s \(HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS\)/,
    );
    const unrecorded = r.events.filter((e) => e.event === "publish.unrecorded");
    expect(unrecorded).toHaveLength(1);
    const ids = (unrecorded[0].messageIds as string[]).slice().sort();
    expect(ids.length).toBeGreaterThan(0);
    expect(r.stderr).toContain(
      `${ids.length} message(s) the hub acknowledged are not recorded as published: the next run sends them again (their ids: the log's publish.unrecorded line)\n`,
    );
    const last = await lastHistory(f);
    expect(last).toMatchObject({
      event: "Stopped",
      transaction_id: openedTransaction(r),
      detail: { phase: "PUBLISH", unrecorded: { messages: ids.length } },
    });
    expect(((last.detail.unrecorded as { messageIds: string[] }).messageIds ?? []).slice().sort()).toEqual(ids);
    const status = await statusOf(f);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      `  sent again: ${ids.length} message(s) the hub acknowledged could not be recorded as published: the next run sends them again under the same messageIds: `,
    );

    f.emulator.setFaults("none");
    const next = await (await startTask(f.platform.args, ENV)).done;
    expect(next.code, next.stderr).toBe(0);
    const twice = storedMessages(f)
      .filter((m) => m.deliveries > 1)
      .map((m) => m.messageId)
      .sort();
    expect(twice).toEqual(ids);
    expect(storedMessages(f).filter((m) => m.deliveries > 2)).toEqual([]);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
  });
});
