/**
 * The warehouse as it really fails, on servers of this test's own. A crash-restart (a backend of the task killed with
 * SIGKILL: the postmaster ends every session and recovers, losing the commits it had not flushed) during PUBLISH, at
 * several moments: every acknowledgement the hub gave is recorded once the server answers again, so after the runs
 * the hub holds every message exactly once. A server shut down for longer than the grace period: the run says how
 * many acknowledgements it could not record and which, and the next run sends those (and only those) again.
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
  storedMessages,
  type ExportFixture,
} from "../support/exportFixture";
import { finalEvent, openedTransaction, startTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { sleep } from "../support/database";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";

const ENV = {
  HUB_EXPORT_CHUNK_SIZE: "100",
  HUB_EXPORT_PUBLISH_CONCURRENCY: "4",
  HUB_EXPORT_ERS_CONCURRENCY: "2",
  HUB_EXPORT_STOP_GRACE_SECONDS: "60",
};

/** A server of the test's own, whose WAL writer flushes seldom: a crash loses the asynchronous commits of seconds. */
async function ownServer(dataDir: string, port?: number): Promise<EmbeddedServer> {
  return startEmbeddedPostgres({ dataDir, persistent: true, port, settings: { wal_writer_delay: "5s" } });
}

/** The pids of the task's sessions (application_name hub-export) on the fixture's database. */
async function taskBackends(f: ExportFixture): Promise<number[]> {
  const { rows } = await f.pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hub-export'",
  );
  return rows.map((r) => r.pid);
}

/** Publish requests the emulator has answered so far. */
const publishes = (f: ExportFixture) => f.emulator.state().faults.stats["queue.publish"].requests;

/** After the runs: every message of the transaction on the hub exactly once, every employee in scope sent. */
async function everyMessageOnce(f: ExportFixture): Promise<void> {
  const exported = await employeesInScope(f.pool, f.platform.publishSchema);
  const { rows } = await f.pool.query(
    `SELECT count(*)::int AS total, count(DISTINCT e)::int AS distinct FROM ${f.t.archive}, unnest(employee_ids) e`,
  );
  expect(rows[0]).toEqual({ total: exported, distinct: exported });
  expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
  const messages = storedMessages(f);
  expect(messages).toHaveLength(await f.count(f.t.archive));
  expect(messages.filter((m) => m.deliveries !== 1).map((m) => m.messageId)).toEqual([]);
}

describe("export task: a crash-restart of the warehouse during PUBLISH", () => {
  const dataDir = path.join(os.tmpdir(), `crash-${crypto.randomBytes(4).toString("hex")}`);
  let server: EmbeddedServer;
  let f: ExportFixture;
  beforeAll(async () => {
    server = await ownServer(dataDir);
    [f] = await Promise.all([
      exportFixture({
        adminUrl: server.adminUrl,
        employees: 3000,
        seed: 36,
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

  it("killed at several moments, each run records what the hub acknowledged: every message reaches the hub once", async () => {
    f.emulator.setFaults("queue.publish:latency=50");
    let transactionId: string | undefined;
    // Each run is killed after that many more publish requests: early, mid-way, later.
    for (const after of [3, 10, 20]) {
      const task = await startTask(f.platform.args, ENV);
      expect(await task.waitFor((e) => e.event === "run.open")).toBe(true);
      // The first run is past its extract; the resumed ones publish from the start.
      if (!transactionId) expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
      const at = publishes(f);
      while (publishes(f) < at + after) await sleep(5);
      const [pid] = await taskBackends(f);
      process.kill(pid, "SIGKILL");
      const r: TaskResult = await task.done;
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^run stopped: warehouse connection lost: .* \(phase PUBLISH\)\n/);
      expect(finalEvent(r)).toBe("run.stopped");
      expect(r.events.some((e) => e.event === "publish.unrecorded")).toBe(false);
      transactionId ??= openedTransaction(r);
      expect(openedTransaction(r)).toBe(transactionId);
      expect(await lastHistory(f)).toMatchObject({ event: "Stopped", transaction_id: transactionId });
      // It stopped mid-way: messages are left to publish.
      expect(await f.count(f.t.messages)).toBeGreaterThan(0);
    }
    f.emulator.setFaults("none");
    const r = await (await startTask(f.platform.args, ENV)).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.events.find((e) => e.event === "run.open")).toMatchObject({ transactionId, resumed: true });
    await everyMessageOnce(f);
    const ers = Object.values(f.emulator.state().ers);
    expect(ers.reduce((n, t) => n + t.duplicates, 0)).toBe(0);
  });
});

describe("export task: a warehouse shut down for longer than the grace period", () => {
  const dataDir = path.join(os.tmpdir(), `shutdown-${crypto.randomBytes(4).toString("hex")}`);
  let server: EmbeddedServer;
  let port: number;
  let f: ExportFixture;
  beforeAll(async () => {
    server = await ownServer(dataDir);
    port = server.port;
    [f] = await Promise.all([
      exportFixture({
        adminUrl: server.adminUrl,
        employees: 1500,
        seed: 37,
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

  it("logs how many acknowledgements it could not record and their ids; the next run sends exactly those again", async () => {
    // Slow answers: the acknowledgements of the batches in flight arrive after the server is gone.
    f.emulator.setFaults("queue.publish:latency=1000");
    const task = await startTask(f.platform.args, { ...ENV, HUB_EXPORT_STOP_GRACE_SECONDS: "6" });
    expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
    const at = publishes(f);
    while (publishes(f) < at + 4) await sleep(5);
    await server.stop();
    const r = await task.done;
    server = await ownServer(dataDir, port);
    expect(r.code, r.stderr).toBe(1);
    const unrecorded = r.events.filter((e) => e.event === "publish.unrecorded");
    expect(unrecorded).toHaveLength(1);
    const ids = unrecorded[0].messageIds as string[];
    expect(ids.length).toBeGreaterThan(0);
    expect(unrecorded[0].messages).toBe(ids.length);
    expect(r.events.filter((e) => e.event === "history.unrecorded")).toHaveLength(1);
    expect(r.events.at(-1)).toMatchObject({ event: "run.stopped", unrecordedMessages: ids.length });
    expect(r.stderr).toContain(
      `${ids.length} message(s) the hub acknowledged are not recorded as published: the next run sends them again (their ids: the log's publish.unrecorded line)\n`,
    );

    // Those the server does not hold as published (a fast shutdown keeps what was committed) are sent again.
    const { rows } = await f.pool.query<{ message_id: string }>(
      `SELECT message_id FROM ${f.t.status} WHERE message_id = ANY($1::uuid[]) AND status = 'PUBLISHED'`,
      [ids],
    );
    const again = ids.filter((id) => !rows.some((row) => row.message_id === id)).sort();
    expect(again.length).toBeGreaterThan(0);
    f.emulator.setFaults("none");
    const next = await (await startTask(f.platform.args, ENV)).done;
    expect(next.code, next.stderr).toBe(0);
    const twice = storedMessages(f)
      .filter((m) => m.deliveries > 1)
      .map((m) => m.messageId)
      .sort();
    expect(twice).toEqual(again);
    expect(storedMessages(f).filter((m) => m.deliveries > 2)).toEqual([]);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
  });
});
