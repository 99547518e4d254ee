/**
 * `npm start` end to end: `hub-export local --json` twice (first and incremental), then `hub-export status`; then, in
 * the same state folder, runs that do not complete say why, with their own transaction id and counts, in the summary
 * (text and --json) and in `status` and `status --transaction`: a refused run, a stopped one and an ExecutionFailed
 * one, after completed runs whose id and counts must not show.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { Client } from "pg";
import { BIN, PROJECT_ROOT, runCli, runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { formatSummary } from "../../local/summary";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-local-"));
const JOB = "HRSYS_EMPL_HUB_ACME_202611_QA";
/** `npm start` reads Pulumi.qa.yaml, the users' file: the tests give the fixture as --file. */
const STACK = ["--file", fixtureStackFile("qa")];
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let first: any;

describe("hub-export local", () => {
  it("provisions the local platform, seeds employees and runs the task bundle to ExecutionCompleted", async () => {
    const r = await runCli(["local", ...STACK, "--json", "--employees", "120", "--dir", dir], { timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(0);
    first = JSON.parse(r.stdout);
    expect(first).toMatchObject({
      jobName: JOB,
      status: "ExecutionCompleted",
      exitCode: 0,
      firstRun: true,
      seeded: 120,
    });
    expect(first.transactionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.intakeJob.counts).toEqual({
      extracted: 120,
      messages: 120,
      published: 120,
      failed: 0,
      heldBack: 0,
      ersEntities: 120,
    });
    // The CLS load sheet built from the sample data's business objects knows every code the sample employees carry.
    expect(first.intakeJob.unknownCodes).toMatchObject({
      sheet: first.files.clsSheet,
      mode: "report",
      checkedMessages: 120,
      heldBack: 0,
      fields: {},
    });
    expect(fs.readFileSync(first.files.clsSheet, "utf8").split("\n")[0]).toBe(
      "SYSTEM,CLS_ENTITY_NAME,CLS_CODE_FIELD_NAME,CLS_CODE,CLS_DESCRIPTION",
    );
    for (const f of ["cls/CLS_LOAD_SHEET.xlsx", "HUB_CHECKLIST.md", "HUB_CHECKLIST.json"])
      expect(fs.existsSync(path.join(first.files.bucket, "hub-configuration", JOB, f))).toBe(true);
    expect(first.intakeJob.statusCounts).toEqual({ PUBLISHED: 120 });
    // Every employee reached its tenant's region, once.
    expect(first.regions.US.messages + first.regions.EU.messages).toBe(120);
    expect(first.regions.US.messages).toBeGreaterThan(0);
    expect(first.regions.EU.messages).toBeGreaterThan(0);
    expect(first.regions.US.duplicates + first.regions.EU.duplicates).toBe(0);
    expect(Object.values(first.routingRules)).toEqual([8, 8]);
    // The files of the procedure are where the summary says.
    expect(JSON.parse(fs.readFileSync(first.files.definition, "utf8")).parameters.job_name).toBe(JOB);
    expect(fs.readFileSync(path.join(first.files.scripts, "credentials.ini"), "utf8")).toBe(
      "[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n",
    );
    expect(fs.statSync(path.join(first.files.scripts, "tenant_credentials.txt")).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(first.files.connections).sort()).toEqual([
      "HUB_MQ_EU_QA.json",
      "HUB_MQ_US_QA.json",
      "PLAT_S3_QA.json",
      "PLAT_WAREHOUSE_QA.json",
    ]);
    // The database URL in the summary carries no password; no psql URL to a port closed once it shows (--keep has one).
    expect(first.database.url).toMatch(/:\*\*\*\*@/);
    expect(first.database.psqlUrl).toBeNull();
    expect(first.database.passwordFile).toBe(path.join(dir, "connections", "PLAT_WAREHOUSE_QA.json"));
    const password = JSON.parse(fs.readFileSync(first.database.passwordFile, "utf8")).password as string;
    expect(password.length).toBeGreaterThan(8);
    expect(r.stdout).not.toContain(password);
    // The run's metrics, as its log lines carried them.
    const all = first.metrics.find((m: { Region: string }) => m.Region === "ALL");
    expect(all).toMatchObject({
      JobName: JOB,
      Outcome: "ExecutionCompleted",
      RunsCompleted: 1,
      RunsExecutionFailed: 0,
      MessagesPublished: 120,
      MessagesFailed: 0,
      ErsEntities: 120,
    });
    expect(
      first.metrics
        .filter((m: { Region: string }) => m.Region !== "ALL")
        .map((m: { Region: string }) => m.Region)
        .sort(),
    ).toEqual(["EU", "US"]);
    // The plain progress lines went to stderr.
    expect(r.stderr).toMatch(/» running the export task: HRSYS_EMPL_HUB_ACME_202611_QA/);
    expect(r.stderr).toMatch(/extract\s+120 employees/);
    // The progress display ends each phase with the summary's figure.
    expect(r.stderr).toMatch(/ers\s+120 entities.* done in/);
    expect(r.stderr).toMatch(/publish\s+120 messages.* done in/);
  });

  it("a second start reuses the data and exports only the employees that changed", async () => {
    const r = await runCli(["local", ...STACK, "--json", "--changes", "7", "--dir", dir], { timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(0);
    const second = JSON.parse(r.stdout);
    expect(second).toMatchObject({ status: "ExecutionCompleted", firstRun: false, seeded: 0, changed: 7 });
    expect(second.transactionId).not.toBe(first.transactionId);
    expect(second.intakeJob.counts).toMatchObject({ extracted: 7, messages: 7, published: 7, failed: 0 });
    // The local publish schema has the changed_at indexes: the 7 changes are found through them, only they are mapped.
    expect(first.intakeJob.changes.missingIndexes).toEqual([]);
    expect(second.intakeJob.changes).toMatchObject({ mode: "incremental", changedRows: 7, missingIndexes: [] });
    // The sample changes move job profiles to the sheet's next one: no unknown code to report.
    expect(second.intakeJob.unknownCodes.fields).toEqual({});
  });

  it("--changes-with-unknown-codes gives job profiles codes the sheet lacks: reported, explained, sent (report mode)", async () => {
    const r = await runCli(["local", ...STACK, "--changes", "6", "--changes-with-unknown-codes", "--dir", dir], {
      timeoutMs: 240_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/CLS check {6}unknown codes in User\.RoleCode \([A-Z_]+_X/);
    expect(r.stdout).toMatch(/these codes are not in the CLS load sheet .*: the hub cannot translate them/);
  });

  it("status shows the job's runs with their per-status counts, and one run's failed messages", async () => {
    const r = await status("--job-name", JOB);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^Database: the embedded default in \S+\/ \(npm start; PLATDB on 127\.0\.0\.1:\d+\)$/);
    expect(lines[1]).toBe(`Job ${JOB} in schema staging`);
    expect(lines[3]).toMatch(/^Latest run: ExecutionCompleted at /);
    const historyAt = lines.indexOf("Run history (staging.HUB_EXPORT_RUN_HISTORY): every outcome, newest first");
    expect(historyAt).toBeGreaterThan(0);
    const runs = lines
      .slice(lines.indexOf("Completed runs (staging.HUB_INTAKE_JOB), newest first"), historyAt)
      .filter((l) => /ExecutionCompleted/.test(l));
    expect(runs).toHaveLength(3);
    const history = lines.slice(historyAt + 1).filter((l) => l.trim() !== "");
    expect(history).toHaveLength(3);
    expect(history[2]).toContain(first.transactionId);
    expect(history[2]).toMatch(/ExecutionCompleted\s+by export-task\s+extracted 120, published 120, failed 0$/);
    expect(runs[2]).toContain(first.transactionId);
    expect(runs[2]).toMatch(/ExecutionCompleted\s+120\s+120\s+120\s+0\s+0\s+120\s+PUBLISHED 120$/);
    expect(runs[1]).toMatch(/PUBLISHED 7$/);

    const one = await status("--job-name", JOB, "--transaction", first.transactionId, "--json");
    expect(one.code, one.stderr).toBe(0);
    const listed = JSON.parse(one.stdout);
    expect(listed).toMatchObject({
      jobName: JOB,
      transactionId: first.transactionId,
      status: "ExecutionCompleted",
      notPublished: [],
    });
    expect(listed.received).toHaveLength(120);
    expect(new Set(listed.received.map((m: { messageId: string }) => m.messageId)).size).toBe(120);

    const unknown = await status("--job-name", JOB, "--transaction", "00000000-0000-4000-8000-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no run 00000000-0000-4000-8000-000000000000 of job");
  });

  it("status with an unknown job name exits 1 and lists the jobs it knows", async () => {
    const r = await status("--job-name", "HRSYS_EMPL_HUB_ACME_202611_QAX");
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`no job HRSYS_EMPL_HUB_ACME_202611_QAX in staging; the jobs known there are:\n  ${JOB}\n`);
  });

  it("--keep prints the summary with its metrics and a psql-usable database, then waits: a second local is refused with how to stop it, and status joins its database", async () => {
    const keep = spawn(
      process.execPath,
      [BIN, "local", ...STACK, "--keep", "--metrics", "--changes", "3", "--dir", dir],
      { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    let stdout = "";
    const exited = new Promise<number | null>((resolve) => keep.on("close", resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        keep.stderr.on("data", (d) => {
          stderr += d;
          if (/psql {6}PGPASSWORD=.*\n/.test(stderr)) resolve();
        });
        keep.stdout.on("data", (d) => (stdout += d));
        keep.on("close", (code) => reject(new Error(`local --keep ended (${code}): ${stderr}`)));
      });
      expect(stderr).toContain("until Ctrl-C");
      // The summary came first, with the run's metrics lines.
      expect(stdout).toContain("Status           ExecutionCompleted");
      expect(stdout).toMatch(/Metrics \(CloudWatch namespace HubExport/);
      expect(stdout).toMatch(new RegExp(`MessagesPublished\\{JobName=${JOB},Region=ALL\\} = 3\\n`));
      expect(stdout).toMatch(new RegExp(`RunsCompleted\\{JobName=${JOB},Region=ALL\\} = 1\\n`));
      // The database answers at the printed URL with the password from the printed file, while it waits.
      const printed = /database {2}(\S+) {2}\(password: field "password" of (\S+)\)/.exec(stderr)!;
      const url = new URL(printed[1]);
      url.password = encodeURIComponent(JSON.parse(fs.readFileSync(printed[2], "utf8")).password);
      const client = new Client({ connectionString: url.toString() });
      await client.connect();
      const { rows } = await client.query("SELECT count(*)::int AS n FROM staging.hub_intake_job");
      await client.end();
      expect(rows[0].n).toBe(4);
      const second = await runCli(["local", ...STACK, "--dir", dir]);
      expect(second.code).toBe(1);
      expect(second.stderr.trimEnd().split("\n").pop()).toBe(
        `embedded PostgreSQL: the data folder ${path.join(dir, "postgres")} is in use by 'hub-export local --keep' (process ${keep.pid}): stop it with Ctrl-C in its terminal, or 'kill ${keep.pid}'`,
      );
      expect(second.stderr).not.toMatch(/internal error/);
      const status = await runMain(["status", ...STACK, "--job-name", JOB, "--dir", dir, "--json"]);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).intakeJobs).toHaveLength(4);
    } finally {
      keep.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  });

  it("refuses a bad stack file with the validation lines, before starting anything", async () => {
    const file = path.join(dir, "Pulumi.bad.yaml");
    fs.writeFileSync(file, "config:\n  hubExport:hubTenants: nope\n");
    const r = await runCli(["local", "--file", file, "--dir", path.join(dir, "other")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("hubExport:hubTenants: Invalid input: expected array, received string");
    expect(r.stderr).not.toMatch(/internal error/);
  });
});

/** Later starts in the same state folder, after the completed runs above. */
const local = (env: NodeJS.ProcessEnv, json = true, extra: string[] = []) =>
  runCli(["local", ...STACK, ...(json ? ["--json"] : []), "--changes", "5", "--dir", dir, ...extra], {
    env,
    timeoutMs: 240_000,
  });
const status = (...args: string[]) => runMain(["status", ...STACK, "--dir", dir, ...args]);

// `first`: a completed run whose id and counts must not show.
describe("a run that does not complete says why", () => {
  it("refused: the refusal's problem, no transaction id or counts of the previous run; status shows it too", async () => {
    const r = await local({ HUB_EXPORT_PUBLISH_CONCURRENCY: "many" });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s.status).toMatch(/^Refused/);
    expect(s.reason).toMatch(/HUB_EXPORT_PUBLISH_CONCURRENCY/);
    expect(s).toMatchObject({ transactionId: null, counts: null, intakeJob: null });
    const text = await local({ HUB_EXPORT_PUBLISH_CONCURRENCY: "many" }, false);
    expect(text.stdout).toMatch(/\nReason {11}.*HUB_EXPORT_PUBLISH_CONCURRENCY/);
    expect(text.stdout).not.toContain(first.transactionId);
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
    expect(s.transactionId).not.toBe(first.transactionId);
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
    expect(text).not.toContain(first.transactionId);
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
    const oneText = await runMain(printed.slice(2));
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
    expect(s.transactionId).not.toBe(first.transactionId);
    expect(s.counts).toMatchObject({ published: 0, failed: s.counts.messages });
    expect(s.counts.messages).toBeGreaterThan(0);
    expect(s.counts.extracted).toBeLessThan(first.counts.extracted);

    const text = await local({}, false, faults);
    expect(text.code).toBe(3);
    expect(text.stdout).toMatch(
      /\nStatus {11}ExecutionFailed \(task exit code 3\)\nReason {11}\d+ message\(s\) failed: \d+ to queue (US|EU) \(HUB_MQ_(US|EU)_QA\): HTTP 400: injected fault/,
    );
    expect(text.stdout).toMatch(/\n {2}publish {8}0 published, \d+ failed/);
    expect(text.stdout).not.toContain(first.transactionId);

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
