import { describe, expect, it } from "vitest";
import { changeLookup, exportMode, formatSummary, runStatus } from "../../local/summary";
import { runMetricRecords } from "../../core/metrics";
import type { LocalSummary } from "../../local/summary";

describe("the local summary's run status", () => {
  it.each([
    [
      "a finished run: its intake job's status",
      { exitCode: 0, signal: null, finalEvent: "run.done" },
      { status: "ExecutionCompleted" },
      "ExecutionCompleted",
    ],
    [
      "a finished run with failed messages (no HUB_INTAKE_JOB row)",
      { exitCode: 3, signal: null, finalEvent: "run.done" },
      null,
      "ExecutionFailed",
    ],
    [
      "a stopped run: resumable, not ExecutionFailed",
      { exitCode: 1, signal: null, finalEvent: "run.stopped" },
      null,
      "Stopped (resumable: the next run resumes the transaction)",
    ],
    [
      "a killed run: resumable",
      { exitCode: 1, signal: "SIGKILL" as const, finalEvent: "progress" },
      null,
      "Stopped (killed by SIGKILL; resumable: the next run resumes the transaction)",
    ],
    [
      "a refused run",
      { exitCode: 1, signal: null, finalEvent: "run.refused" },
      null,
      "Refused (nothing was touched; fix the problem and run again)",
    ],
    [
      "a crash without the final line",
      { exitCode: 70, signal: null, finalEvent: "run.open" },
      null,
      "Stopped (task exit code 70 without its final log line; resumable: the next run resumes the transaction)",
    ],
  ])("%s", (_, run, job, expected) => {
    const status = runStatus(run, job);
    expect(status).toBe(expected);
    if (run.finalEvent !== "run.done") expect(status).not.toMatch(/ExecutionFailed/);
  });
});

describe("the local summary's change lookup", () => {
  const lookup = {
    mode: "incremental" as const,
    since: "2026-11-01T00:00:00.000000",
    changedRows: 1234,
    seconds: 0.02,
    chunks: 2,
    limit: 5000,
    firstLoad: false,
    rowsByTable: { employee: 1000, employee_address: 234 },
  };

  it("says in which publish tables the changed rows are, found through the changed_at indexes", () => {
    expect(changeLookup({ ...lookup, missingIndexes: [] })).toBe(
      "incremental mode: 1,234 changed rows in the publish tables (employee 1,000, employee_address 234), found in 0.02 s, 2 chunk statement(s) (through the changed_at indexes)",
    );
    expect(exportMode({ ...lookup, missingIndexes: [] })).toBe(
      "incremental (the employees changed since 2026-11-01T00:00:00.000000)",
    );
  });

  it("without them, names the tables scanned, the time it took and where the DDL is", () => {
    expect(changeLookup({ ...lookup, seconds: 3.4, missingIndexes: ["employee", "employee_address"] })).toBe(
      'incremental mode: 1,234 changed rows in the publish tables (employee 1,000, employee_address 234), found in 3.4 s, 2 chunk statement(s); no changed_at index on employee, employee_address: each scanned in full (task/README.md, "Publish schema indexes")',
    );
  });

  it("in full mode, says the count is incremental mode's limit, not the number of changed rows ('5,001 changed rows')", () => {
    const full = {
      ...lookup,
      mode: "full" as const,
      changedRows: 5001,
      rowsByTable: { employee: 1000, employee_address: 4001 },
      missingIndexes: [],
    };
    expect(changeLookup(full)).toBe(
      "full mode: more than 5,000 changed rows (incremental mode's limit) in the publish tables, found in 0.02 s, 2 chunk statement(s) (through the changed_at indexes)",
    );
    expect(exportMode(full)).toBe(
      "full (more changed rows since 2026-11-01T00:00:00.000000 than incremental mode takes: every employee mapped)",
    );
  });

  it("a client's first run is a full load from idl_date, not 'incremental', however few rows it found", () => {
    const first = { ...lookup, since: "1901-01-01T00:00:00.000000", firstLoad: true, missingIndexes: [] };
    expect(exportMode(first)).toBe("full (first load from idl_date 1901-01-01T00:00:00.000000)");
    expect(changeLookup(first)).toMatch(/^full \(first load\): 1,234 changed rows in the publish tables /);
    expect(changeLookup(first)).not.toContain("incremental");
  });
});

describe("the local summary explains its numbers", () => {
  const US = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
  const EU = "7a2d4f6b-8c1e-4a3b-b5d7-9e0f2a4c6e8b";
  const APAC = "5b1e7c2a-9d4f-4a6b-8c3e-1f2a3b4c5d6e";
  const metrics = runMetricRecords({
    jobName: "J",
    outcome: "ExecutionFailed",
    seconds: 1,
    timestamp: 0,
    regions: {
      US: { published: 0, failed: 28, heldBack: 0, setAside: 0, ersEntities: 0 },
      EU: { published: 3, failed: 19, heldBack: 0, setAside: 0, ersEntities: 3 },
    },
  });
  const summary = {
    jobName: "J",
    transactionId: "00000000-0000-4000-8000-000000000001",
    status: "ExecutionFailed",
    reason:
      "47 message(s) failed: 28 to queue US (HUB_MQ_US_QA): HTTP 400: injected fault; 19 to queue EU (HUB_MQ_EU_QA): HTTP 400: injected fault; the next run retries them",
    counts: { extracted: 50, messages: 50, published: 3, failed: 47, heldBack: 0, ersEntities: 3 },
    countsSoFar: false,
    resumed: false,
    unrecorded: [] as string[],
    exitCode: 3,
    firstRun: false,
    seeded: 0,
    seededRegions: [],
    changed: 50,
    intakeJob: null,
    regions: {
      US: { destination: "HUB_MQ_US_QA", queueName: "acme-empl-us-qa", messages: 678, duplicates: 0, rejected: 0 },
      EU: { destination: "HUB_MQ_EU_QA", queueName: "acme-empl-eu-qa", messages: 3, duplicates: 0, rejected: 0 },
    },
    ers: {},
    routingRules: { [US]: 8, [EU]: 8 },
    removed: {
      rows: ["x"],
      hubTenantIds: [APAC],
      hubTenantCodes: { [APAC]: "ACME_APAC_QA" },
      connections: ["HUB_MQ_APAC_QA"],
      messages: 2,
    },
    changes: {
      mode: "incremental" as const,
      since: "2026-11-26T12:20:34.000000",
      changedRows: 50,
      rowsByTable: { employee: 50 },
      limit: 5000,
      firstLoad: false,
      seconds: 0.01,
      missingIndexes: [],
      chunks: 1,
    },
    hubTenantCodes: { [US]: "ACME_US_QA", [EU]: "ACME_EU_QA" },
    files: {
      root: "/r",
      bucket: "/r/b",
      definition: "/r/d",
      scripts: "/r/s",
      clsSheet: "/r/c",
      connections: "/r/n",
      postgres: "/r/p",
      taskLog: "/r/l",
    },
    database: { url: "u", stagingSchema: "staging", psqlUrl: null, passwordFile: "/r/n/x.json", psql: null },
    metrics,
    hub: { cfg: "", ers: "", hrsys: "", state: "", queues: {} },
    queries: { intakeJob: "SELECT 1;", statuses: "SELECT 2;", statusCommand: "npx hub-export status" },
    seconds: 1,
    interrupted: null,
  } satisfies LocalSummary;
  const text = formatSummary(summary);

  it("per region: this run's published and failed, apart from what the emulator's queue holds", () => {
    expect(text).toContain(
      "Per hub region: this run's messages (its metrics), and what the emulator's queue holds since this start\n",
    );
    expect(text).toMatch(
      /^ {2}US {4}HUB_MQ_US_QA {7}acme-empl-us-qa {8}this run: 0 published, 28 failed; {2}queue: 678 messages, 0 duplicates, 0 rejected$/m,
    );
    expect(text).toMatch(/^ {2}EU .* this run: 3 published, 19 failed; {2}queue: 3 messages/m);
  });

  it("a resumed run: the transaction's counts (every start of it) apart from this start's queue", () => {
    const resumed = formatSummary({ ...summary, resumed: true });
    expect(resumed).toContain("\nCounts per phase (the resumed transaction, its earlier starts included)\n");
    expect(resumed).toContain(
      "Per hub region: the resumed transaction's messages (its metrics, every start of it), and what the emulator's queue holds since this start\n",
    );
    expect(resumed).toMatch(/^ {2}EU .* transaction: 3 published, 19 failed; {2}this start's queue: 3 messages/m);
    expect(resumed).not.toContain("this run");
  });

  it("a run that could not record what the hub acknowledged: says the next start sends those again", () => {
    expect(text).not.toContain("Sent again");
    const ids = ["00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"];
    expect(formatSummary({ ...summary, unrecorded: ids })).toContain(
      "\nSent again       2 message(s) the hub acknowledged could not be recorded as published (the database did not answer in time): the next start sends them again under the same messageIds (the task log's publish.unrecorded line lists them)\n",
    );
  });

  it("routing rules and the Removed line name the hub tenants by code and id", () => {
    expect(text).toContain(`  routing rules posted, per hub tenant: ACME_US_QA (${US}) 8, ACME_EU_QA (${EU}) 8\n`);
    expect(text).toMatch(
      new RegExp(
        `^Removed {10}hub tenant\\(s\\) ACME_APAC_QA \\(${APAC}\\) \\(2 unsent message\\(s\\) discarded\\)`,
        "m",
      ),
    );
  });

  it("says what the export was, and lists the metrics only on request (--metrics; --json has them)", () => {
    expect(text).toContain(
      "\nEmployees        50 changed in the sample data since the last start\nExport           incremental (the employees changed since 2026-11-26T12:20:34.000000)\n",
    );
    expect(text).not.toContain("MessagesPublished{");
    expect(text).toMatch(
      /^Metrics {10}\d+ values in CloudWatch namespace HubExport \('--metrics' lists them; '--json' has them\)$/m,
    );
    const all = formatSummary(summary, { metrics: true });
    expect(all).toContain("  MessagesFailed{JobName=J,Region=US} = 28\n");
  });
});
