/**
 * A lost warehouse is a clean stop. The bundled task, its sessions ended by an administrator (pg_terminate_backend)
 * mid-publish, or its server restarted mid-extract: it logs `run.stopped` with the reason, emits RunsStopped, writes
 * the Stopped row on a fresh session (once the server is back, within the grace period) and exits 1 without a stack
 * trace. What the hub acknowledged meanwhile is recorded, so the next run resumes, loses nothing and sends nothing twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { Client } from "pg";
import {
  exportFixture,
  employeesInScope,
  lastHistory,
  storedMessages,
  type ExportFixture,
} from "../support/exportFixture";
import { finalEvent, openedTransaction, startTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { sleep, taskSessionsGone } from "../support/database";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";
import { isEmfRecord, METRICS } from "../../core/metrics";

const ENV = {
  HUB_EXPORT_CHUNK_SIZE: "100",
  HUB_EXPORT_PUBLISH_CONCURRENCY: "2",
  HUB_EXPORT_ERS_CONCURRENCY: "2",
  HUB_EXPORT_STOP_GRACE_SECONDS: "60",
};
/** What PostgreSQL tells the sessions it ends, for pg_terminate_backend and for a fast shutdown alike. */
const LOST = "warehouse connection lost: 57P01 terminating connection due to administrator command";

/** The task stopped cleanly for the lost warehouse, in `phase`: its last line, its metric, its exit, no stack trace. */
async function stoppedCleanly(f: ExportFixture, r: TaskResult, phase: string): Promise<void> {
  expect(r.signal).toBeNull();
  expect(r.stderr).toBe(`run stopped: ${LOST} (phase ${phase})\nthe next run resumes the transaction\n`);
  expect(r.code).toBe(1);
  expect(r.events.find((e) => e.event === "run.stopping")).toMatchObject({ reason: LOST });
  expect(finalEvent(r)).toBe("run.stopped");
  expect(r.events.at(-1)).toMatchObject({ reason: LOST, phase, transactionId: openedTransaction(r) });
  const metrics = r.events.filter(isEmfRecord);
  expect(metrics).toHaveLength(1);
  expect(metrics[0]).toMatchObject({ Outcome: "Stopped", [METRICS.stopped]: 1 });
  await taskSessionsGone(f.pool);
  expect(await lastHistory(f)).toMatchObject({
    event: "Stopped",
    transaction_id: openedTransaction(r),
    detail: { phase, reason: LOST },
  });
}

/** The next run resumes the transaction and completes; then every employee in scope was sent once, under one messageId. */
async function resumesLosingNothing(f: ExportFixture, transactionId: string): Promise<void> {
  f.emulator.setFaults("none");
  const r = await (await startTask(f.platform.args, ENV)).done;
  expect(r.code, r.stderr).toBe(0);
  expect(r.events.find((e) => e.event === "run.open")).toMatchObject({ transactionId, resumed: true });
  expect(finalEvent(r)).toBe("run.done");
  const exported = await employeesInScope(f.pool, f.platform.publishSchema);
  const { rows } = await f.pool.query(
    `SELECT count(*)::int AS total, count(DISTINCT e)::int AS distinct FROM ${f.t.archive}, unnest(employee_ids) e`,
  );
  expect(rows[0]).toEqual({ total: exported, distinct: exported });
  expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));
  const messages = storedMessages(f);
  expect(messages).toHaveLength(await f.count(f.t.archive));
  expect(messages.filter((m) => m.deliveries !== 1)).toEqual([]);
  const ers = Object.values(f.emulator.state().ers);
  expect(ers.reduce((n, t) => n + t.entities, 0)).toBe(exported);
  expect(ers.reduce((n, t) => n + t.duplicates, 0)).toBe(0);
}

describe("export task: a lost warehouse is a clean stop", () => {
  describe("its sessions ended by an administrator mid-publish", () => {
    let f: ExportFixture;
    beforeAll(async () => {
      [f] = await Promise.all([
        exportFixture({
          employees: 1500,
          seed: 33,
          parameters: { records_per_ers_request: 20 },
          emulator: { deduplicate: false },
        }),
        taskBundle(),
      ]);
    });
    afterAll(async () => f?.close());

    it("stops, records why on a fresh session, and the next run resumes: nothing lost, nothing sent twice", async () => {
      f.emulator.setFaults("queue.publish:latency=100");
      const task = await startTask(f.platform.args, ENV);
      expect(await task.waitFor((e) => e.event === "extract.done")).toBe(true);
      const publishes = () => f.emulator.state().faults.stats["queue.publish"].requests;
      const at = publishes();
      while (publishes() < at + 2) await sleep(10);
      const { rows } = await f.pool.query<{ n: number }>(
        "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hub-export'",
      );
      expect(rows[0].n).toBeGreaterThan(0);
      const r = await task.done;
      await stoppedCleanly(f, r, "PUBLISH");
      // It stopped mid-way: messages are left to publish.
      expect(await f.count(f.t.messages)).toBeGreaterThan(0);
      await resumesLosingNothing(f, openedTransaction(r));
    });
  });

  describe("its server restarted mid-extract", () => {
    /** A server of this test's own, restarted on the same port and data folder. */
    const dataDir = path.join(os.tmpdir(), `restart-${crypto.randomBytes(4).toString("hex")}`);
    let server: EmbeddedServer;
    let port: number;
    let f: ExportFixture;
    beforeAll(async () => {
      server = await startEmbeddedPostgres({ dataDir, persistent: true });
      port = server.port;
      [f] = await Promise.all([
        exportFixture({
          adminUrl: server.adminUrl,
          employees: 1500,
          seed: 34,
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

    it("stops, records why once the server is back, and the next run resumes: nothing lost, nothing sent twice", async () => {
      f.emulator.setFaults("queue.publish:latency=100");
      // The extract's chunks wait for this lock once publishing is under way: the run is mid-extract, batches in flight.
      const holder = new Client({ connectionString: f.db.url });
      holder.on("error", () => {});
      await holder.connect();
      const task = await startTask(f.platform.args, ENV);
      const publishes = () => f.emulator.state().faults.stats["queue.publish"].requests;
      while (publishes() < 2) await sleep(10);
      await holder.query(`BEGIN; LOCK TABLE ${f.t.runPart} IN SHARE MODE`);
      const waiting = async () =>
        (
          await f.pool.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hub-export' AND wait_event_type = 'Lock'",
          )
        ).rows[0].n;
      while ((await waiting()) === 0) await sleep(20);
      expect(task.events.some((e) => e.event === "extract.done")).toBe(false);

      await server.stop();
      expect(await task.waitFor((e) => e.event === "run.stopping")).toBe(true);
      server = await startEmbeddedPostgres({ dataDir, persistent: true, port });
      const r = await task.done;
      await holder.end().catch(() => {});
      await stoppedCleanly(f, r, "EXTRACT");
      await resumesLosingNothing(f, openedTransaction(r));
    });
  });
});
