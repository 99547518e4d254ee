import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, employeesInScope, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import type { LinkStats } from "../../task/http/concurrency";

const ENV = {
  HUB_EXPORT_RETRY_BASE_MS: "5",
  HUB_EXPORT_RETRY_MAX_MS: "50",
  HUB_EXPORT_RETRY_ATTEMPTS: "20",
  HUB_EXPORT_CHUNK_SIZE: "200",
  HUB_EXPORT_CONCURRENCY: JSON.stringify({ queue: { floor: 1, ceiling: 6 }, ers: { floor: 1, ceiling: 3 } }),
};

describe("export task against a remote, rate-limited hub", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    // Far more than the limits allow at the ceilings: 6 batches of 10 in 15 ms would be 4,000 messages/s.
    [f] = await Promise.all([
      exportFixture({
        employees: 450,
        link: { latency: "queue=15ms±5,ers=20ms", rateLimit: "queue=500/s@20,ers=20/s@2" },
      }),
      taskBundle(),
    ]);
  });
  afterAll(async () => f?.close());

  it("adapts to the limits: every employee published once, the task's 429 counts match the hub's, windows within floor and ceiling", async () => {
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    const result = await runTask(f.platform.args, ENV);
    expect(result.stderr).toBe("");
    expect(
      result.code,
      JSON.stringify(
        result.events.filter((e) => e.event === "run.stopped" || e.event === "publish.failed").slice(0, 2),
      ),
    ).toBe(0);
    const state = f.emulator.state();
    const stored = Object.values(state.queues)
      .flatMap((q) => Object.values(q.destinations))
      .reduce((n, d) => n + d.count, 0);
    expect(stored).toBe(inScope);
    expect(await f.count(f.t.archive)).toBe(inScope);

    const done = result.events.find((e) => e.event === "run.done") as { links: Record<string, LinkStats> };
    const hub = state.links;
    expect(Object.keys(done.links).sort()).toEqual(["ers.EU", "ers.US", "queue.EU", "queue.US"]);
    for (const region of ["US", "EU"]) {
      const task = done.links[`queue.${region}`];
      expect(task.throttled, `queue.${region}`).toBe(hub[`queue.${region}`].throttled);
      expect(task.requests).toBe(hub[`queue.${region}`].requests);
      expect(task.window.min).toBeGreaterThanOrEqual(1);
      expect(task.window.max).toBeLessThanOrEqual(6);
      expect(task.rttMs.p50).toBeGreaterThanOrEqual(9);
      expect(done.links[`ers.${region}`].window.max).toBeLessThanOrEqual(3);
    }
    // Slow start overshoots the limit, and the controller backs off.
    expect(hub["queue.US"].throttled + hub["queue.EU"].throttled).toBeGreaterThan(0);
    expect(done.links["queue.US"].cuts.throttled + done.links["queue.EU"].cuts.throttled).toBeGreaterThan(0);
    // ERS requests of both regions meet one limit here (the test tenants have no region in the emulator's config).
    expect(hub["ers.ANY"].throttled).toBe(done.links["ers.US"].throttled + done.links["ers.EU"].throttled);
  });
});
