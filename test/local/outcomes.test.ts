/**
 * A run that does not complete says why, with its own transaction id and counts, in the summary (text and --json) and
 * in `status` and `status --transaction`: a refused run, a stopped one and an ExecutionFailed one, each after a
 * completed run whose id and counts must not show.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT, runCli } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { formatSummary } from "../../local/summary";

fs.mkdirSync(path.join(PROJECT_ROOT, ".tmp"), { recursive: true });
const dir = fs.mkdtempSync(path.join(PROJECT_ROOT, ".tmp", "outcomes-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const local = (env: NodeJS.ProcessEnv, json = true, extra: string[] = []) =>
  runCli(
    [
      "local",
      "--file",
      fixtureStackFile("qa"),
      ...(json ? ["--json"] : []),
      "--employees",
      "40",
      "--changes",
      "5",
      "--dir",
      dir,
      ...extra,
    ],
    { env, timeoutMs: 240_000 },
  );
const status = (...args: string[]) =>
  runCli(["status", "--file", fixtureStackFile("qa"), "--dir", dir, ...args], { timeoutMs: 120_000 });

describe("a run that does not complete says why", () => {
  let completed: any;
  beforeAll(async () => {
    const r = await local({});
    expect(r.code, r.stderr).toBe(0);
    completed = JSON.parse(r.stdout);
  }, 240_000);

  it("refused: the refusal's problem, no transaction id or counts of the previous run; status shows it too", async () => {
    const r = await local({ HUB_EXPORT_PUBLISH_CONCURRENCY: "many" });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s.status).toMatch(/^Refused/);
    expect(s.reason).toMatch(/HUB_EXPORT_PUBLISH_CONCURRENCY/);
    expect(s).toMatchObject({ transactionId: null, counts: null, intakeJob: null });
    const text = await local({ HUB_EXPORT_PUBLISH_CONCURRENCY: "many" }, false);
    expect(text.stdout).toMatch(/\nReason {11}.*HUB_EXPORT_PUBLISH_CONCURRENCY/);
    expect(text.stdout).not.toContain(completed.transactionId);
    const shown = await status();
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/Refused\s+by hub-export local\s+: .*HUB_EXPORT_PUBLISH_CONCURRENCY/);
  });

  it("stopped: the stop's reason and its own transaction id, never the previous run's; status shows it in progress", async () => {
    // Each publish takes 4 s and the run may take 2: it stops with its transaction open, resumable.
    const stopping = [
      { HUB_EXPORT_RUN_DEADLINE_SECONDS: "2" },
      ["--hub-faults", "queue.publish:latency=4000"],
    ] as const;
    const r = await local(stopping[0], true, [...stopping[1]]);
    expect(r.code, r.stderr).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s.status).toMatch(/^Stopped \(resumable/);
    expect(s.reason).toBe("run deadline of 2 s passed");
    expect(s.transactionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.transactionId).not.toBe(completed.transactionId);
    // Its own counts so far (what its extract committed; nothing published within the deadline), never the completed run's.
    expect(s).toMatchObject({ intakeJob: null, countsSoFar: true });
    expect(s.counts).toEqual({
      extracted: expect.any(Number),
      messages: expect.any(Number),
      published: 0,
      failed: 0,
      heldBack: 0,
      ersEntities: 0,
    });
    expect(s.counts.messages).toBeLessThanOrEqual(s.counts.extracted);
    // The text the CLI prints for it (a second stopped start would resume, and may complete, the transaction).
    const text = formatSummary(s);
    expect(text).toMatch(
      new RegExp(
        `\\nTransaction id {3}${s.transactionId}\\nStatus {11}Stopped .*\\nReason {11}run deadline of 2 s passed\\n`,
      ),
    );
    expect(text).not.toContain(completed.transactionId);
    expect(text).toContain(
      `Counts per phase (this run, so far: it stopped before the end)\n  extract        ${s.counts.extracted} employees in ${s.counts.messages} messages\n  publish        0 published (the next run publishes the rest)`,
    );
    const shown = await status();
    expect(shown.stdout).toMatch(
      new RegExp(
        `in progress: ${s.transactionId} .* stopped: run deadline of 2 s passed \\(the next run resumes it\\)`,
      ),
    );
    const one = await status("--transaction", s.transactionId, "--json");
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({
      transactionId: s.transactionId,
      reason: "run deadline of 2 s passed",
      counts: s.counts,
      countsSoFar: true,
    });
    // The summary's own status command, pasted as printed, reads this run in this state folder.
    const printed: string[] = s.queries.statusCommand.split(" ");
    expect(printed.slice(0, 3)).toEqual(["npx", "hub-export", "status"]);
    expect(printed).not.toContain("--job-name");
    const oneText = await runCli(printed.slice(2), { timeoutMs: 120_000 });
    expect(oneText.code, oneText.stderr).toBe(0);
    expect(oneText.stdout).toContain(
      `  so far: extracted ${s.counts.extracted}, messages ${s.counts.messages}, published 0, ERS entities 0 (it stopped before the end)`,
    );
    // The next start resumes that transaction and completes it.
    const next = await local({});
    expect(JSON.parse(next.stdout)).toMatchObject({
      status: "ExecutionCompleted",
      reason: null,
      transactionId: s.transactionId,
    });
  });

  it("ExecutionFailed: the failure's error and this run's own counts; status and status --transaction say the same", async () => {
    // Every publish answered 400: each message fails, the run ends ExecutionFailed (exit 3).
    const faults = ["--hub-faults", "queue.publish:400=1"];
    const r = await local({}, true, faults);
    expect(r.code, r.stderr).toBe(3);
    const s = JSON.parse(r.stdout);
    // The reason is the cause, in the queue's words, with counts per queue: not a pointer to a table.
    expect(s).toMatchObject({
      status: "ExecutionFailed",
      reason: expect.stringMatching(
        /^(\d+) message\(s\) failed: \d+ to queue (US|EU) \(HUB_MQ_(US|EU)_QA\): HTTP 400: injected fault(; \d+ to queue (US|EU) \(HUB_MQ_(US|EU)_QA\): HTTP 400: injected fault)?; the next run retries them$/,
      ),
    });
    expect(s.transactionId).not.toBe(completed.transactionId);
    expect(s.counts).toMatchObject({ published: 0, failed: s.counts.messages });
    expect(s.counts.messages).toBeGreaterThan(0);
    expect(s.counts.extracted).toBeLessThan(completed.counts.extracted);

    const text = await local({}, false, faults);
    expect(text.code).toBe(3);
    expect(text.stdout).toMatch(
      /\nStatus {11}ExecutionFailed \(task exit code 3\)\nReason {11}\d+ message\(s\) failed: \d+ to queue (US|EU) \(HUB_MQ_(US|EU)_QA\): HTTP 400: injected fault/,
    );
    expect(text.stdout).toMatch(/\n {2}publish {8}0 published, \d+ failed/);
    expect(text.stdout).not.toContain(completed.transactionId);

    const shown = await status();
    expect(shown.stdout).toMatch(
      new RegExp(
        `${s.transactionId}\\s+ExecutionFailed\\s+by export-task\\s+extracted ${s.counts.extracted}, published 0, failed ${s.counts.failed}\\s+: ${s.counts.failed} message\\(s\\) failed: `,
      ),
    );
    // status opens with its database and the latest run (this failed one), before the completed runs.
    const opening = shown.stdout.split("\n");
    expect(opening[0]).toBe(
      `Database: the embedded default in ${path.relative(process.cwd(), dir)}/ (npm start; PLATDB on 127.0.0.1:${opening[0].match(/:(\d+)\)$/)?.[1]})`,
    );
    // The latest run is the second failed start's (the text one).
    const latest = /\nTransaction id {3}(\S+)\n/.exec(text.stdout)![1];
    expect(opening[3]).toMatch(
      new RegExp(`^Latest run: ExecutionFailed at \\S+, transaction ${latest} \\(by export-task\\)$`),
    );
    expect(opening[4]).toBe(`  reason: ${/\nReason {11}(.*)\n/.exec(text.stdout)![1]}`);
    const one = await status("--transaction", s.transactionId);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(
      new RegExp(
        `^Database: .*\\nRun ${s.transactionId} of \\S+: ExecutionFailed: ${s.counts.failed} message\\(s\\) failed: `,
      ),
    );
    expect(one.stdout).toContain(
      `extracted ${s.counts.extracted}, messages ${s.counts.messages}, published 0, failed ${s.counts.failed}`,
    );
    const oneJson = JSON.parse((await status("--transaction", s.transactionId, "--json")).stdout);
    expect(oneJson).toMatchObject({
      transactionId: s.transactionId,
      status: "ExecutionFailed",
      reason: s.reason,
      counts: s.counts,
    });
  });
});
