/**
 * The bundled task against a hostile hub on loopback (the emulator's hostile answers, emulator/hostile.ts): a hub that
 * drips, stays silent, floods, echoes the request's headers or sends terminal escape sequences, or answers 200 with
 * the wrong body. Each run ends within its deadlines and its memory bound, and what it logs and stores carries no
 * secret and no control character; the next run against a sane hub loses nothing.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureStackFile } from "../fixtures/stacks";
import { exportFixture, employeesInScope, lastHistory, type ExportFixture } from "../support/exportFixture";
import {
  FINAL_EVENTS,
  finalEvent,
  openedTransaction,
  runTask,
  runTaskWithin,
  taskBundle,
  type TaskResult,
} from "../support/taskProcess";
import { QUEUES, JOB_NAME } from "../../bench/platform";
import { executeCommand } from "../../cli/command";
import statusCommand from "../../cli/commands/status";

const ENV = {
  HUB_EXPORT_RETRY_BASE_MS: "50",
  HUB_EXPORT_RETRY_MAX_MS: "200",
  HUB_EXPORT_CHUNK_SIZE: "50",
  HUB_EXPORT_PUBLISH_CONCURRENCY: "4",
  HUB_EXPORT_ERS_CONCURRENCY: "2",
};
/**
 * Short deadlines, so that a drip or a silence costs seconds: 1 s per request, 3 s of retries per request. Only where
 * the hub holds its answers: a loaded machine can take a second over an answer that streams.
 */
const SHORT_DEADLINES = { HUB_EXPORT_REQUEST_DEADLINE_SECONDS: "1", HUB_EXPORT_RETRY_BUDGET_SECONDS: "3" };
/**
 * A hang guard, not a speed bound: a drip or a silence without deadlines holds a run forever; such a run is killed
 * after this and fails on its exit code (a killed run has none).
 */
const HANG_MS = 50_000;
/** The task's documented peak RSS (task/README.md). */
const PEAK_RSS_BOUND_MB = 200;
/** C0 but the newline that ends a line, DEL, C1, and the bidi and line-separator characters. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe("export task: a hostile hub", () => {
  let f: ExportFixture;
  let inScope: number;
  const results: TaskResult[] = [];
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({ employees: 90, seed: 21, parameters: { records_per_ers_request: 20 } }),
      taskBundle(),
    ]);
    inScope = await employeesInScope(f.pool, f.platform.publishSchema);
  });
  afterAll(async () => f?.close());

  /** One run with the hub answering `spec`: ending by itself with its final line, bounded in memory. */
  const hostileRun = async (spec: string, expectedCode: number, env: Record<string, string> = {}) => {
    f.emulator.setFaults(spec);
    const r = await runTaskWithin(f.platform.args, { ...ENV, ...env }, HANG_MS);
    results.push(r);
    expect(r.signal, `${spec}: the run hung`).toBeNull();
    expect(r.code, `${spec}: ${r.stderr}`).toBe(expectedCode);
    expect(FINAL_EVENTS).toContain(finalEvent(r));
    expect(r.events.at(-1)!.peakRssMb as number, `${spec}: peak RSS`).toBeLessThan(PEAK_RSS_BOUND_MB);
    return r;
  };
  /** A sane hub again: the next run completes and everything is where it belongs. */
  const recover = async () => {
    f.emulator.setFaults("none");
    const r = await runTask(f.platform.args, ENV);
    results.push(r);
    expect(r.code, r.stderr).toBe(0);
    expect(finalEvent(r)).toBe("run.done");
    expect(await f.count(f.t.messages)).toBe(0);
    expect(await f.count(f.t.run)).toBe(0);
    expect(await f.count(f.t.status, "status <> 'PUBLISHED'")).toBe(0);
    const s = f.emulator.state();
    expect(
      s.queues.US.destinations[QUEUES.US.queueName].distinct + s.queues.EU.destinations[QUEUES.EU.queueName].distinct,
    ).toBe(await f.count(f.t.archive));
  };
  /** New work for the next run: every employee in scope changed. */
  const touch = () =>
    f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE plat_region IN ('US', 'EU')`,
    );
  const reasons = async () =>
    (
      await f.pool.query<{ reason: string }>(`SELECT DISTINCT reason FROM ${f.t.status} WHERE status = 'FAILED'`)
    ).rows.map((r) => r.reason);
  const status = async (...args: string[]) => {
    let out = "";
    const sink = new Writable({ write: (chunk, _enc, done) => ((out += chunk), done()) });
    const code = await executeCommand(
      "status",
      statusCommand,
      ["--file", fixtureStackFile("qa"), "--job-name", JOB_NAME, "--database-url", f.db.url, ...args],
      { stdout: sink, stderr: sink, stdin: process.stdin },
    );
    expect(code, out).toBe(0);
    return out;
  };

  it("drip: each request ends at its deadline, retries end with their budget; the messages fail with that reason", async () => {
    const r = await hostileRun("queue.publish:drip=1", 3, SHORT_DEADLINES);
    expect(r.events.at(-1)).toMatchObject({
      event: "run.done",
      status: "ExecutionFailed",
      failed: inScope,
      published: 0,
    });
    expect(await reasons()).toEqual([
      expect.stringMatching(
        /^gave up after \d attempts \(its retry budget of 3 s is used up\): no complete answer within 1 s \(the request's deadline\)$/,
      ),
    ]);
    // Within the budget: a few attempts per batch, not 8 of 60 s.
    const publishes = f.emulator.state().faults.stats["queue.publish"].requests;
    expect(publishes).toBeLessThanOrEqual(Math.ceil(inScope / 10) * 4 + 8);
    await recover();
  });

  it("silence: ERS never answers; the run stops at its deadlines (resumable) and records why", async () => {
    await touch();
    const r = await hostileRun("ers.entities:silence=1", 1, SHORT_DEADLINES);
    expect(finalEvent(r)).toBe("run.stopped");
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      detail: {
        phase: "ERS",
        reason: expect.stringMatching(
          /^ERS API: gave up for tenant \S+ after \d attempts? \(its retry budget of 3 s is used up\): no complete answer within 1 s/,
        ),
      },
    });
    expect(await f.count(f.t.intakeJob, `transaction_id = '${openedTransaction(r)}'`)).toBe(0);
    await recover();
  });

  it("huge body: read up to 64 KiB, then the request fails for good, once, and memory stays bounded", async () => {
    await touch();
    const r = await hostileRun("ers.entities:huge=1", 1);
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      detail: {
        reason: expect.stringMatching(
          /ERS API: the request for tenant \S+ failed for good: the answer is longer than 64 KiB; it was cut off and the request is not retried/,
        ),
      },
    });
    // Never retried: each request sent once (the stream's in flight, then the ERS phase's first), never 1 GiB each.
    const ers = f.emulator.state().faults.stats["ers.entities"];
    expect(ers.injected.huge).toBe(ers.requests);
    expect(ers.requests).toBeLessThanOrEqual(2 * Number(ENV.HUB_EXPORT_ERS_CONCURRENCY) + 2);
    expect(r.events.at(-1)!.peakRssMb as number).toBeLessThan(PEAK_RSS_BOUND_MB);
    await recover();
  });

  it("huge body from the broker: its answer is read up to 64 KiB, the batch fails for good, once, then each message once alone", async () => {
    await touch();
    const r = await hostileRun("queue.publish:huge=1", 3);
    expect(r.events.at(-1)).toMatchObject({ event: "run.done", status: "ExecutionFailed", published: 0 });
    expect(await reasons()).toEqual([
      "the answer is longer than 64 KiB; it was cut off and the request is not retried",
    ]);
    // Never retried: each batch once, then each of its messages once on its own (a batch refused for good is split to
    // find out which message it is about), never 1 GiB each; and no message counts it as a refusal of its own.
    const publish = f.emulator.state().faults.stats["queue.publish"];
    expect(publish.injected.huge).toBe(publish.requests);
    expect(publish.requests).toBeLessThanOrEqual(Math.ceil(inScope / 10) + inScope + 4);
    expect(await f.count(f.t.status, "status = 'FAILED' AND refusals > 0")).toBe(0);
    await recover();
  });

  it("echo of the request's headers and body: no credentials string, client secret or bearer token in the log, the tables or status", async () => {
    await touch();
    // The broker's authorize echoes the form (client_secret), HRSYS the Basic header: every message fails, the report is recorded.
    const authorize = await hostileRun("queue.authorize:echo=1;hrsys.intakeJobs:echo=1", 3);
    expect(
      authorize.events.filter((e) => e.event === "hub.call.failed" && e.api === "HRSYS").map((e) => e.reason),
    ).toContainEqual(expect.stringContaining("authorization: Basic [secret]"));
    const echoed = await reasons();
    expect(echoed.length).toBeGreaterThan(0);
    for (const reason of echoed)
      expect(reason).toMatch(
        /^gave up after \d attempts: authorize: HTTP 400: bad request; you sent .*client_secret=\[secret\]/,
      );
    // The queue echoes the bearer token.
    await hostileRun("queue.publish:echo=1", 3);
    for (const reason of await reasons())
      expect(reason).toMatch(/^HTTP 400: bad request; you sent .*authorization: bearer \[secret\]/);
    // ERS echoes the Basic header into the stop's reason.
    const failed = (
      await f.pool.query<{ transaction_id: string }>(
        `SELECT transaction_id FROM ${f.t.status} WHERE status = 'FAILED' LIMIT 1`,
      )
    ).rows[0].transaction_id;
    await hostileRun("ers.entities:echo=1", 1);
    expect(await lastHistory(f)).toMatchObject({
      event: "Stopped",
      detail: { reason: expect.stringContaining("authorization: Basic [secret]") },
    });

    const secrets = f.platform.secrets.flatMap((s) => [
      s,
      encodeURIComponent(s),
      new URLSearchParams({ s }).toString().slice(2),
      Buffer.from(s).toString("base64"),
    ]);
    const credentials = f.platform.installation.routingRules.map((r) => r.credentialsString.reveal().slice(0, -2));
    const stored = JSON.stringify([
      (await f.pool.query(`SELECT reason FROM ${f.t.status}`)).rows,
      (await f.pool.query(`SELECT detail FROM ${f.t.runHistory}`)).rows,
    ]);
    const shown = [
      await status(),
      await status("--json"),
      await status("--transaction", failed),
      await status("--transaction", failed, "--json"),
    ].join("\n");
    for (const [what, text] of [
      ["the task's output", results.map((x) => x.stdout + x.stderr).join("\n")],
      ["the tables", stored],
      ["hub-export status", shown],
    ]) {
      expect(text, what).toContain("[secret]");
      for (const secret of [...secrets, ...credentials])
        expect(text.includes(secret), `${what} holds a secret (${secret.slice(0, 4)}...)`).toBe(false);
      expect(text, what).not.toMatch(/bearer (?!\[secret\])/i);
    }
    await recover();
  });

  it("escape sequences in errors: escaped in the log, _STATUS, the run history and status output", async () => {
    await touch();
    const r = await hostileRun("queue.publish:escape=1;hrsys.intakeJobs:escape=1", 3);
    const failedReasons = await reasons();
    const shownFailed = await status("--transaction", openedTransaction(r));
    await hostileRun("ers.entities:escape=1", 1);
    const texts: [string, string][] = [
      [
        "log fields",
        JSON.stringify(
          results.slice(-2).flatMap((x) => x.events.map((e) => Object.values(e).filter((v) => typeof v === "string"))),
        ),
      ],
      [
        "stderr",
        results
          .slice(-2)
          .map((x) => x.stderr)
          .join(""),
      ],
      ["_STATUS", failedReasons.join("\n")],
      ["run history", JSON.stringify((await lastHistory(f)).detail)],
      ["status", await status()],
      ["status --transaction", shownFailed],
    ];
    // The text as shown, and each value a JSON reader gets out of it.
    const strings = (v: unknown): string[] =>
      typeof v === "string"
        ? [v]
        : Array.isArray(v)
          ? v.flatMap(strings)
          : v && typeof v === "object"
            ? Object.entries(v).flatMap(([k, x]) => [k, ...strings(x)])
            : [];
    const values = (t: string): string[] => {
      try {
        return strings(JSON.parse(t));
      } catch {
        return [t];
      }
    };
    for (const [what, text] of texts) {
      expect(text, what).not.toMatch(CONTROL);
      for (const value of values(text)) expect(value, what).not.toMatch(CONTROL);
    }
    expect(failedReasons[0]).toContain(
      "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mALERT\\x1b[0m\\x0d\\x0aforged: run.done\\x9b31m\\u202egnp.exe",
    );
    expect(texts.find(([w]) => w === "status")![1]).toContain("\\x1b[2J");
    await recover();
  });

  it("200 with a wrong body: a publish or an authorize answer that says nothing fails its messages; ERS asks only for 2xx", async () => {
    await touch();
    await hostileRun("queue.publish:wrongBody=1", 3);
    expect(await reasons()).toEqual([
      expect.stringMatching(/^unexpected answer to the publish \(HTTP 200\): \{"unexpected":"shape"/),
    ]);
    await hostileRun("queue.authorize:wrongBody=1", 3);
    expect(await reasons()).toEqual([
      expect.stringMatching(
        /^gave up after \d attempts.*: authorize: the authorize answer lacks access_token or simple_client$/,
      ),
    ]);
    const ers = await hostileRun("ers.entities:wrongBody=1", 0);
    expect(ers.events.at(-1)).toMatchObject({ event: "run.done", status: "ExecutionCompleted" });
    await recover();
    expect(await f.count(f.t.archive, "true")).toBeGreaterThanOrEqual(inScope);
  });
});
