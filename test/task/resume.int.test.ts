/**
 * The kill loop: the task killed with SIGKILL over and over, in every phase, against standard (non-deduplicating)
 * queues. It loses nothing, never puts one employee under two messageIds, and each kill costs at most the messages
 * and ERS entities that were in flight, counted where they arrive: at the broker and at the ERS API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { FINAL_EVENTS, finalEvent, startTask, taskBundle } from "../support/taskProcess";
import { QUEUES, TENANTS } from "../../bench/platform";
import { mulberry32 } from "../../emulator/faults";
import { startRecordingProxy, type RecordingProxy } from "../support/recordingProxy";
import { QUEUE_API } from "../../core/hubContract";
import { taskSessionsGone } from "../support/database";

const PUBLISH_CONCURRENCY = 4;
const ERS_CONCURRENCY = 2;
const ERS_BATCH = 20;
const ENV = {
  HUB_EXPORT_CHUNK_SIZE: "250",
  HUB_EXPORT_PUBLISH_CONCURRENCY: String(PUBLISH_CONCURRENCY),
  HUB_EXPORT_ERS_CONCURRENCY: String(ERS_CONCURRENCY),
};
/** What may be in flight at a kill, and so sent again: batches x messages, ERS requests x entities. */
const PUBLISH_BOUND = PUBLISH_CONCURRENCY * QUEUE_API.maxBatchSize;
const ERS_BOUND = ERS_CONCURRENCY * ERS_BATCH;
const KILLS = 22;

/**
 * When to kill: on a log event (the phase it starts), after a delay; or once the hub has received more publishes or
 * ERS requests (`puts`, `ers`): then requests are stored and not yet answered, the worst moment.
 */
type Trigger = { name: string; on: string; delayMs: () => number; puts?: number; ers?: number };
const TRIGGERS: Trigger[] = [
  { name: "load", on: "run.start", delayMs: () => 0 },
  { name: "open", on: "run.open", delayMs: () => 0 },
  { name: "publish (requests in flight)", on: "run.open", delayMs: () => 0, puts: 60 },
  { name: "extract+publish", on: "run.open", delayMs: () => 30 + Math.floor(random() * 200) },
  { name: "ERS (requests in flight)", on: "run.open", delayMs: () => 0, ers: 3 },
  { name: "ERS phase", on: "publish.done", delayMs: () => 0 },
  { name: "finish", on: "ers.done", delayMs: () => 0 },
];
const random = mulberry32(20261122);

describe("export task: killed with SIGKILL in every phase, against standard queues", () => {
  let f: ExportFixture;
  let proxy: RecordingProxy;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        employees: 1000,
        seed: 11,
        parameters: { records_per_ers_request: ERS_BATCH },
        emulator: { deduplicate: false },
        // Answers arrive 5 ms after the hub processed the request: kills find requests stored and not yet answered.
        hub: async (emulator) => (proxy = await startRecordingProxy(emulator.urls.base, { answerDelayMs: 5 })).urls,
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => {
    await proxy?.close();
    await f?.close();
  });

  it(`loses nothing, puts no employee under two messageIds, and re-sends at most what was in flight (${KILLS} kills)`, async () => {
    let exported = await employeesInScope(f.pool, f.platform.publishSchema);
    /** Per kill: what the killed run delivered (to the broker, to ERS) that was not recorded: its in-flight work. */
    const perKill: { trigger: string; lastEvent?: string; queue: number; ers: number }[] = [];
    // What the hub holds, once the proxy has nothing in flight: deliveries per messageId and per ERS entity key.
    const received = async () => {
      await proxy.settled();
      const s = f.emulator.state({ messages: true });
      const queue = new Map<string, number>();
      for (const region of ["US", "EU"] as const)
        for (const m of s.queues[region].destinations[QUEUES[region].queueName]?.messages ?? [])
          queue.set(m.messageId, m.deliveries);
      const ers = new Map<string, number>();
      for (const t of Object.values(s.ers)) for (const [k, n] of Object.entries(t.received ?? {})) ers.set(k, n);
      const duplicates = [...queue.values()].reduce((n, d) => n + d - 1, 0);
      const ersDuplicates = [...ers.values()].reduce((n, d) => n + d - 1, 0);
      return { queue, ers, duplicates, ersDuplicates };
    };
    /** Delivered during the run (count went up) and still unrecorded after it: not PUBLISHED, or (ERS) not archived. */
    const inFlightAtKill = async (
      before: Awaited<ReturnType<typeof received>>,
      after: Awaited<ReturnType<typeof received>>,
    ) => {
      const { rows: published } = await f.pool.query<{ message_id: string }>(
        `SELECT message_id FROM ${f.t.status} WHERE status = 'PUBLISHED'`,
      );
      const acknowledged = new Set(published.map((r) => r.message_id));
      const queue = [...after.queue].filter(
        ([id, n]) => n > (before.queue.get(id) ?? 0) && !acknowledged.has(id),
      ).length;
      // Still queued (the ERS part not done): the employees of those messages, from their _ARCHIVE rows.
      const { rows: waiting } = await f.pool.query<{ key: string }>(
        `SELECT m.transaction_id || ' ' || e AS key FROM ${f.t.messages} m JOIN ${f.t.archive} a USING (message_id), unnest(a.employee_ids) e`,
      );
      const notArchived = new Set(waiting.map((r) => r.key));
      const ers = [...after.ers].filter(([k, n]) => n > (before.ers.get(k) ?? 0) && notArchived.has(k)).length;
      return { queue, ers };
    };

    let kills = 0;
    for (let i = 0; kills < KILLS; i++) {
      expect(i, "too many runs finished before a kill landed").toBeLessThan(KILLS * 3);
      const trigger = TRIGGERS[i % TRIGGERS.length];
      const before = await received();
      const task = await startTask(f.platform.args, ENV);
      const puts = proxy.puts.length;
      const ersPosts = proxy.ersPosts;
      const seen = await task.waitFor((e) => e.event === trigger.on);
      if (seen) await new Promise((r) => setTimeout(r, trigger.delayMs()));
      while (
        seen &&
        task.child.exitCode === null &&
        ((trigger.puts && proxy.puts.length < puts + trigger.puts) ||
          (trigger.ers && proxy.ersPosts < ersPosts + trigger.ers))
      ) {
        await new Promise((r) => setTimeout(r, 2));
      }
      task.child.kill("SIGKILL");
      const result = await task.done;
      if (result.signal === "SIGKILL") {
        kills++;
        // A statement the task had sent still runs, and may commit, after the kill: the database is read once the
        // killed task's sessions are gone.
        await taskSessionsGone(f.pool);
        perKill.push({
          trigger: trigger.name,
          lastEvent: finalEvent(result),
          ...(await inFlightAtKill(before, await received())),
        });
      } else {
        // It finished before the kill: it must end with its final line, and the next transaction gets new work.
        expect(FINAL_EVENTS).toContain(finalEvent(result));
        expect(result.stderr).toBe("");
        const touched = await f.pool.query(
          `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE employee_id IN (SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region IN ('US', 'EU') ORDER BY md5(employee_id || $1) LIMIT 300)`,
          [String(i)],
        );
        exported += touched.rowCount!;
      }
    }

    const final = await startTask(f.platform.args, ENV);
    const last = await final.done;
    expect(last.stderr).toBe("");
    expect(last.code).toBe(0);
    expect(finalEvent(last)).toBe("run.done");
    const end = await received();

    // Kills landed in every phase: the last line each killed run wrote names the phase it had reached.
    const phasesHit = new Set(perKill.map((k) => k.lastEvent));
    for (const reached of ["run.start", "run.open", "publish.done", "ers.done"])
      expect([...phasesHit], `no kill after ${reached}`).toContain(reached);
    expect(perKill).toHaveLength(KILLS);

    // Measured at the broker and at the ERS API: what each kill left in flight is within the bound, and everything
    // delivered twice over the whole loop is accounted for by those kills (so each kill cost at most its in-flight work).
    const resentQueue = perKill.reduce((n, k) => n + k.queue, 0);
    const resentErs = perKill.reduce((n, k) => n + k.ers, 0);
    console.log(
      `kill loop: ${KILLS} kills; in flight per kill, re-sent by the next runs (queue messages / ERS entities, kill phase): ${perKill.map((k) => `${k.queue}/${k.ers} ${k.trigger}`).join(", ")}; ` +
        `bounds ${PUBLISH_BOUND}/${ERS_BOUND}; duplicate deliveries in all: queue ${end.duplicates}, ERS ${end.ersDuplicates}`,
    );
    for (const k of perKill) {
      expect(k.queue, `queue messages in flight at a kill in ${k.trigger}`).toBeLessThanOrEqual(PUBLISH_BOUND);
      expect(k.ers, `ERS entities in flight at a kill in ${k.trigger}`).toBeLessThanOrEqual(ERS_BOUND);
    }
    expect(end.duplicates).toBe(resentQueue);
    expect(end.ersDuplicates).toBe(resentErs);
    // The kills with requests in flight did cost re-sends (so the bounds are measured, not vacuous).
    expect(perKill.filter((k) => k.trigger.startsWith("publish (")).some((k) => k.queue > 0)).toBe(true);
    expect(perKill.some((k) => k.ers > 0)).toBe(true);

    // Nothing lost: every run's employees archived once, nothing left behind, every archived message at the broker.
    const { rows: jobs } = await f.pool.query(
      `SELECT transaction_id, status, extracted_count FROM ${f.t.completedRuns}`,
    );
    expect(jobs.every((j) => j.status === "ExecutionCompleted")).toBe(true);
    expect(jobs.reduce((n, j) => n + j.extracted_count, 0)).toBe(exported);
    const { rows: archived } = await f.pool.query(
      `SELECT count(*)::int AS total, count(DISTINCT (transaction_id, e))::int AS distinct FROM ${f.t.archive}, unnest(employee_ids) e`,
    );
    expect(archived[0]).toEqual({ total: exported, distinct: exported });
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.run)).toBe(0);
    expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(await f.count(f.t.archive));

    // At the broker: every archived message under its one id, and each employee of a transaction under one messageId.
    const state = f.emulator.state({ messages: true });
    const stored = [
      ...(state.queues.US.destinations[QUEUES.US.queueName].messages ?? []),
      ...(state.queues.EU.destinations[QUEUES.EU.queueName].messages ?? []),
    ];
    const ids = new Set(stored.map((m) => m.messageId));
    const { rows: archivedIds } = await f.pool.query<{ message_id: string }>(`SELECT message_id FROM ${f.t.archive}`);
    expect(archivedIds.filter((r) => !ids.has(r.message_id))).toEqual([]);
    expect(stored.length).toBe(archivedIds.length);
    const messageOf = new Map<string, string>();
    const underTwo: string[] = [];
    for (const m of stored) {
      const body = JSON.parse(m.body!) as { header: { transactionId: string }; entities: { UserId: string }[] };
      for (const e of body.entities) {
        const key = `${body.header.transactionId} ${e.UserId}`;
        if (messageOf.has(key) && messageOf.get(key) !== m.messageId) underTwo.push(key);
        messageOf.set(key, m.messageId);
      }
    }
    expect(underTwo).toEqual([]);
    expect(messageOf.size).toBe(exported);
    // ERS has every entity of every run.
    const ers = Object.values(state.ers).reduce((n, t) => n + t.entities - t.duplicates, 0);
    expect(ers).toBe(exported);
    expect(state.ers[TENANTS.US.hubTenantId].entities).toBeGreaterThan(0);
  });
});
