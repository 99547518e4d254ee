/**
 * A dead hub stops a run after a few deadlines, whatever its size (task/http/breaker.ts): the bundled task against
 * 3,000 queued messages and a broker that never answers, one that drips, an ERS API that never answers, and a dead EU
 * broker next to a live US one. The time settings are the defaults scaled down sixfold (a deadline of 10 s, not 60;
 * the breaker's window and the retry budget in the same proportion), so each run takes seconds; the counts below
 * (requests the hub saw, deadline waits paid one after another) are bounded by the breaker's threshold and the links'
 * windows, not by the messages or the clock. What stays queued is neither failed nor refused; the next run probes the
 * open link with one request, and once the hub is back, loses nothing and sends nothing twice.
 * `npm run bench:outage` prints the seconds at the default settings.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, lastHistory, type ExportFixture } from "../support/exportFixture";
import { finalEvent, runTask, taskBundle, type TaskResult } from "../support/taskProcess";
import { QUEUES, TENANTS } from "../../bench/platform";
import { DEFAULT_BREAKER } from "../../task/http/breaker";

const MESSAGES = 3000;
/** The queue link's window when the run starts (task/http/concurrency.ts: 4, with 25 % headroom): its requests in flight. */
const IN_FLIGHT = 5;
/** Requests a dead link may see in a run: those in flight, and those sent before the breaker's last failure. */
const DEAD_LINK_REQUESTS = IN_FLIGHT + DEFAULT_BREAKER.failures;
/** Deadline waits a dead link may cost, one after another. */
const DEADLINE_WAITS = 2;
/**
 * The defaults (60 s, 180 s, 30 s) divided by 6: the same proportions, seconds instead of minutes, and a deadline a
 * live link meets at a load of 20 on two cores (at 4 s, the live US link of the dead-EU test missed it once).
 */
const SCALED = {
  HUB_EXPORT_REQUEST_DEADLINE_SECONDS: "10",
  HUB_EXPORT_RETRY_BUDGET_SECONDS: "30",
  HUB_EXPORT_BREAKER_WINDOW_SECONDS: "5",
};
const DEADLINE_REASON = "no complete answer within 10 s (the request's deadline)";
/** A hang guard for a loaded machine: the tests wait for the run, never time it. */
const TEST_TIMEOUT = 6 * 60_000;

interface Breakers {
  [link: string]: { state: string; failures: number; deadlines: number; deadlineWaits: number };
}

/** 3,000 employees of the US and EU tenants: 3,000 messages. */
async function fixture(): Promise<ExportFixture> {
  return exportFixture({ employees: MESSAGES, seed: 33, platRegions: ["US", "EU"] });
}

const opened = (r: TaskResult) =>
  r.events
    .filter((e) => e.event === "link.open")
    .map((e) => e.link as string)
    .sort();
const breakers = (r: TaskResult) => r.events.at(-1)!.breakers as Breakers;
const publishes = (f: ExportFixture) => f.emulator.state().faults.stats["queue.publish"];
const stored = (f: ExportFixture, region: "US" | "EU") =>
  f.emulator.state().queues[region].destinations[QUEUES[region].queueName];

describe.concurrent("export task: a dead hub stops the run after a few deadlines, whatever its size", () => {
  beforeAll(async () => {
    await taskBundle();
  });

  it.each([
    ["silent", "queue.publish:silence=1"],
    ["dripping", "queue.publish:drip=1"],
  ])(
    "a %s broker and 3,000 queued messages: both queue links open after a round or two of deadlines; every message stays queued, none failed",
    async (_kind, spec) => {
      const f = await fixture();
      try {
        f.emulator.setFaults(spec);
        const r = await runTask(f.platform.args, SCALED);
        expect(r.code, r.stderr).toBe(1);
        expect(finalEvent(r)).toBe("run.stopped");
        expect(r.stderr).toMatch(/run stopped: hub link queue\.(US|EU) is open/);
        expect(opened(r)).toEqual(["queue.EU", "queue.US"]);
        // What was recorded: a resumable stop naming each link, why it opened and its last error.
        const history = await lastHistory(f);
        expect(history.event).toBe("Stopped");
        expect(Object.keys(history.detail.openLinks as object).sort()).toEqual(["queue.EU", "queue.US"]);
        for (const region of ["US", "EU"]) {
          expect(history.detail.reason).toMatch(
            new RegExp(
              `hub link queue\\.${region} is open \\(\\d+ requests failed in a row and none was answered for \\d+ s\\); last error: ${DEADLINE_REASON.replace(/[()]/g, "\\$&")}`,
            ),
          );
        }
        // Nothing failed, nothing refused, nothing published: all 3,000 wait in the queue for the next run.
        expect(await f.count(f.t.messages)).toBe(MESSAGES);
        expect(await f.count(f.t.status)).toBe(0);
        // Bounded by the breaker, not by the 300 batches (which at 3 attempts each cost 900 requests before).
        for (const region of ["US", "EU"] as const) {
          expect(publishes(f).regions[region]).toBeLessThanOrEqual(DEAD_LINK_REQUESTS);
          const b = breakers(r)[`queue.${region}`];
          expect(b).toMatchObject({ state: "open" });
          expect(b.deadlines).toBeLessThanOrEqual(DEAD_LINK_REQUESTS);
          expect(b.deadlineWaits).toBeLessThanOrEqual(DEADLINE_WAITS);
        }
        // The metric (and the stop's alert) tell someone.
        const metrics = r.events.find((e) => e.event === "run.metrics" && e.Region === "ALL");
        expect(metrics).toMatchObject({ RunsStopped: 1, HubLinksOpen: 2, OpenLinks: ["queue.EU", "queue.US"] });
      } finally {
        await f.close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    "a silent ERS API: the messages are published, the ERS links open and their messages stay queued; the ERS phase sends nothing more",
    async () => {
      const f = await fixture();
      try {
        f.emulator.setFaults("ers.entities:silence=1");
        const r = await runTask(f.platform.args, SCALED);
        expect(r.code, r.stderr).toBe(1);
        expect(r.events.at(-1)).toMatchObject({
          event: "run.stopped",
          phase: "ERS",
          reason: expect.stringMatching(
            /^hub link ers\.(US|EU) is open .*; last error: no complete answer within 10 s/,
          ),
        });
        expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(MESSAGES);
        expect(await f.count(f.t.messages)).toBe(MESSAGES);
        const ers = f.emulator.state().faults.stats["ers.entities"].requests;
        // 30 requests of 100 entities; the stream's in flight, and none in the ERS phase.
        expect(ers).toBeLessThanOrEqual(2 * (IN_FLIGHT + DEFAULT_BREAKER.failures));
        const b = breakers(r);
        expect(Math.max(b["ers.US"].deadlineWaits, b["ers.EU"].deadlineWaits)).toBeLessThanOrEqual(DEADLINE_WAITS);
        expect(Object.keys((await lastHistory(f)).detail.openLinks as object).sort()).toEqual(["ers.EU", "ers.US"]);
      } finally {
        await f.close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    "a dead EU broker: the US messages are published in that run; the next run probes EU with one request; once EU is back, nothing lost, nothing twice",
    async () => {
      const f = await fixture();
      try {
        const byRegion = async (region: string) =>
          f.count(`${f.platform.publishSchema}.employee`, `plat_region = '${region}'`);
        const [us, eu] = [await byRegion("US"), await byRegion("EU")];
        f.emulator.setFaults("queue.publish.EU:silence=1");
        const first = await runTask(f.platform.args, SCALED);
        expect(first.code, first.stderr).toBe(1);
        expect(opened(first)).toEqual(["queue.EU"]);
        expect(first.events.at(-1)).toMatchObject({
          event: "run.stopped",
          phase: "PUBLISH",
          reason: expect.stringMatching(
            /^hub link queue\.EU is open \(.*\); last error: no complete answer within 10 s/,
          ),
        });
        // Every US message published and sent to ERS, in that run; every EU message still queued, none failed.
        expect(stored(f, "US").distinct).toBe(us);
        expect(f.emulator.state().ers[TENANTS.US.hubTenantId].entities).toBe(us);
        expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(us);
        expect(await f.count(f.t.status, "status <> 'PUBLISHED'")).toBe(0);
        expect(await f.count(f.t.messages)).toBe(eu);
        expect(publishes(f).regions.EU).toBeLessThanOrEqual(DEAD_LINK_REQUESTS);
        expect(breakers(first)["queue.EU"].deadlineWaits).toBeLessThanOrEqual(DEADLINE_WAITS);
        expect(Object.keys((await lastHistory(f)).detail.openLinks as object)).toEqual(["queue.EU"]);

        // Still dead: the next run sends EU one probe request, which fails; it stops again after one deadline.
        f.emulator.setFaults("queue.publish.EU:silence=1");
        const probed = await runTask(f.platform.args, SCALED);
        expect(probed.code, probed.stderr).toBe(1);
        expect(probed.events.find((e) => e.event === "link.probe")).toMatchObject({ links: ["queue.EU"] });
        expect(publishes(f).regions).toEqual({ EU: 1 });
        expect(breakers(probed)["queue.EU"]).toMatchObject({ state: "open", deadlines: 1, deadlineWaits: 1 });
        expect((await lastHistory(f)).detail.reason).toMatch(
          /^hub link queue\.EU is open \(the first request of the run, its probe, failed: the last run left it open\); last error: no complete answer within 10 s/,
        );
        expect(await f.count(f.t.messages)).toBe(eu);

        // Back: the probe is answered, the link closes, the run completes. Nothing lost, nothing sent twice.
        f.emulator.setFaults("none");
        const healed = await runTask(f.platform.args, SCALED);
        expect(healed.code, healed.stderr).toBe(0);
        expect(healed.events.at(-1)).toMatchObject({ event: "run.done", status: "ExecutionCompleted", failed: 0 });
        expect([stored(f, "US").distinct, stored(f, "EU").distinct]).toEqual([us, eu]);
        expect(stored(f, "US").duplicates + stored(f, "EU").duplicates).toBe(0);
        expect(await f.count(f.t.messages)).toBe(0);
        expect(await f.count(f.t.status, "status = 'PUBLISHED'")).toBe(MESSAGES);
        const done = await lastHistory(f);
        expect(done.event).toBe("ExecutionCompleted");
        expect(done.detail.openLinks).toBeUndefined();
      } finally {
        await f.close();
      }
    },
    TEST_TIMEOUT,
  );
});

describe("export task: a live hub with faults keeps its links closed", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 2000, seed: 34, platRegions: ["US", "EU"] }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("one request in ten failing (503, 502, resets) opens no link: everyone is published in one run", async () => {
    f.emulator.setFaults({ spec: "queue.publish:503=0.05,reset=0.03,502=0.02;ers.entities:503=0.1", seed: 9 });
    const r = await runTask(f.platform.args, { HUB_EXPORT_RETRY_BASE_MS: "5", HUB_EXPORT_RETRY_MAX_MS: "50" });
    expect(r.code, r.stderr).toBe(0);
    expect(opened(r)).toEqual([]);
    expect(Object.values(r.events.at(-1)!.breakers as Breakers).every((b) => b.state === "closed")).toBe(true);
    expect(publishes(f).injected["503"]).toBeGreaterThan(0);
    expect(stored(f, "US").distinct + stored(f, "EU").distinct).toBe(2000);
  });
});

describe("export task: a silent HRSYS API (its report best-effort, as by default)", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 40, seed: 35, platRegions: ["US", "EU"] }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  /** Deadlines of a second, and a breaker window to match, so that a silent hub costs seconds here. */
  const SHORT = {
    HUB_EXPORT_REQUEST_DEADLINE_SECONDS: "1",
    HUB_EXPORT_RETRY_BUDGET_SECONDS: "3",
    HUB_EXPORT_BREAKER_WINDOW_SECONDS: "1",
  };

  it("the STARTED report opens the HRSYS links, the final report fails at once, the run completes and records them; the next run probes them", async () => {
    f.emulator.setFaults("hrsys.intakeJobs:silence=1");
    const r = await runTask(f.platform.args, SHORT);
    expect(r.code, r.stderr).toBe(0);
    expect(r.events.at(-1)).toMatchObject({ event: "run.done", status: "ExecutionCompleted", published: 40 });
    expect(opened(r)).toEqual(["hrsys.EU", "hrsys.US"]);
    // The STARTED report's attempts, and none for the final one: its link was open.
    expect(f.emulator.state().faults.stats["hrsys.intakeJobs"].requests).toBeLessThanOrEqual(
      2 * DEFAULT_BREAKER.failures,
    );
    const completed = r.events
      .filter((e) => e.event === "hub.call.failed" && e.status === "COMPLETED")
      .map((e) => e.reason);
    expect(completed).toEqual([
      expect.stringMatching(/^hub link hrsys\.(US|EU) is open/),
      expect.stringMatching(/^hub link hrsys\.(US|EU) is open/),
    ]);
    const history = await lastHistory(f);
    expect(history.event).toBe("ExecutionCompleted");
    expect(Object.keys(history.detail.openLinks as object).sort()).toEqual(["hrsys.EU", "hrsys.US"]);

    f.emulator.setFaults("none");
    await f.pool.query(`UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp`);
    const next = await runTask(f.platform.args, SHORT);
    expect(next.code, next.stderr).toBe(0);
    expect(next.events.find((e) => e.event === "link.probe")).toMatchObject({ links: ["hrsys.EU", "hrsys.US"] });
    expect(next.events.filter((e) => e.event === "intakeJob.reported").map((e) => e.status)).toEqual([
      "STARTED",
      "COMPLETED",
    ]);
    expect((await lastHistory(f)).detail.openLinks).toBeUndefined();
  });
});
