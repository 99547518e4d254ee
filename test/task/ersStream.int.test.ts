import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { TENANTS } from "../../bench/platform";

const FAST_RETRY = {
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "50",
  HUB_EXPORT_RETRY_ATTEMPTS: "12",
  HUB_EXPORT_CHUNK_SIZE: "100",
};
/** Why messages failed, if any did: the assertion's message. */
const failures = (r: TaskResult) =>
  JSON.stringify(r.events.filter((e) => e.event === "publish.failed" || e.event === "run.stopped").slice(0, 3));

describe("export task: ERS alongside publishing", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    // Messages of 3 entities, ERS requests of at most 2: every message's entities are split over two requests.
    [f] = await Promise.all([
      exportFixture({
        employees: 300,
        parameters: { records_per_hub_message: 3, records_per_ers_request: 2 },
        emulator: { ersMaxBatch: 2 },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("an ERS that fails for good stops the run; published messages wait in _MESSAGES, and the next run sends and archives them", async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    f.emulator.setFaults("ers.entities:503=1");
    const stopped = await runTask(f.platform.args, FAST_RETRY);
    expect(stopped.code).toBe(1);
    // Every request failing: the ERS links open (task/http/breaker.ts) and their messages stay queued.
    expect(
      stopped.events
        .filter((e) => e.event === "link.open")
        .map((e) => e.link)
        .sort(),
    ).toEqual(["ers.EU", "ers.US"]);
    expect(stopped.events.at(-1)).toMatchObject({
      event: "run.stopped",
      phase: "ERS",
      reason: expect.stringMatching(
        /^hub link ers\.(US|EU) is open \(20 of the 20 requests of the last 30 s failed\); last error: HTTP 503: injected fault/,
      ),
    });
    // Every message was published and acknowledged; none left the queue (done) without its entities reaching ERS.
    const messages = await f.count(f.t.messages);
    expect(messages).toBeGreaterThan(0);
    const { rows: diag } = await f.pool.query(
      `SELECT coalesce(s.status, 'NONE') AS status, s.reason, count(*)::int AS n FROM ${f.t.messages} m LEFT JOIN ${f.t.status} s USING (message_id) GROUP BY 1, 2`,
    );
    expect(await f.count(f.t.status, "status = 'PUBLISHED'"), JSON.stringify(diag) + failures(stopped)).toBe(messages);
    // The bodies are in _ARCHIVE from the extract on; the queue still holds every one of them.
    expect(await f.count(f.t.archive)).toBe(messages);

    f.emulator.setFaults("");
    const resumed = await runTask(f.platform.args, FAST_RETRY);
    expect(resumed.stderr).toBe("");
    expect(resumed.code, failures(resumed)).toBe(0);
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.archive)).toBe(messages);
    const ers = f.emulator.state().ers;
    expect(ers[TENANTS.US.hubTenantId].entities + ers[TENANTS.EU.hubTenantId].entities).toBe(inScope);
    const { rows } = await f.pool.query(`SELECT status, published_count, ers_entity_count FROM ${f.t.completedRuns}`);
    expect(rows).toEqual([{ status: "ExecutionCompleted", published_count: messages, ers_entity_count: inScope }]);
  });

  it("splits a message's entities over ERS requests and archives it once all are sent", async () => {
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE plat_region IN ('US', 'EU')`,
    );
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    f.emulator.reset();
    const result = await runTask(f.platform.args, FAST_RETRY);
    expect(result.stderr).toBe("");
    expect(result.code, failures(result)).toBe(0);
    const ers = f.emulator.state().ers;
    expect(ers[TENANTS.US.hubTenantId].entities + ers[TENANTS.EU.hubTenantId].entities).toBe(inScope);
    const { rows } = await f.pool.query(
      `SELECT published_count, ers_entity_count FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(rows[0].ers_entity_count).toBe(inScope);
    expect(await f.count(f.t.messages)).toBe(0);
    const done = result.events.find((e) => e.event === "ers.done") as { entities: number; streamed: number };
    expect(done).toMatchObject({ entities: inScope, streamed: inScope });
  });
});
