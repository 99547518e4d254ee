/** The summary of `npm start`, for a person to read. */
import path from "node:path";
import { formatEmfRecord, METRIC_NAMESPACE, METRICS, type EmfRecord } from "../core/metrics";
import type { TaskRunResult } from "./taskProcess";
import type { IntakeJobRow, RunCounts } from "../operate/status";
import type { Removed } from "./deployment";

export interface LocalSummary {
  jobName: string;
  transactionId: string | null;
  status: string;
  /** Why the run did not complete: the refusal's problems, the stop's reason, the failure's error (null: it completed). */
  reason: string | null;
  /** This run's own counts, from its run-history row (null: it recorded none, e.g. refused before it opened). */
  counts: RunCounts | null;
  /** The counts are what a stopped run had done so far: failed and held back are not known yet. */
  countsSoFar: boolean;
  /**
   * The run resumed a transaction that earlier starts began: its counts and metrics are the transaction's (every
   * start of it), while the emulator's queue holds what this start sent.
   */
  resumed: boolean;
  /** Messages the hub acknowledged that the run could not record as published: the next start sends them again. */
  unrecorded: string[];
  exitCode: number;
  /** The signal that interrupted the start (Ctrl-C: SIGINT) and stopped the run, if one did. */
  interrupted: NodeJS.Signals | null;
  firstRun: boolean;
  seeded: number;
  /** Platform regions that got sample employees at this start (the first start: every one). */
  seededRegions: string[];
  changed: number;
  intakeJob: IntakeJobRow | null;
  regions: Record<
    string,
    { destination: string; queueName: string; messages: number; duplicates: number; rejected: number }
  >;
  ers: Record<string, { requests: number; entities: number }>;
  routingRules: Record<string, number>;
  /** What the previous start provisioned and the stack config no longer has, deleted at this start. */
  removed: Removed;
  /** How the run found the changed employees: its mode (a first load from idl_date, incremental, full) and the rows. */
  changes: IntakeJobRow["changes"];
  /** The stack's hub tenant id → code, to name them. */
  hubTenantCodes: Record<string, string>;
  files: {
    root: string;
    bucket: string;
    definition: string;
    scripts: string;
    clsSheet: string;
    connections: string;
    postgres: string;
    taskLog: string;
  };
  /**
   * `url` is the admin URL with its password masked; `psqlUrl` is the task login's, whose password is in `passwordFile`.
   * The server runs only with --keep: without it, the psql fields are null (their port is closed once the summary shows).
   */
  database: { url: string; stagingSchema: string; psqlUrl: string | null; passwordFile: string; psql: string | null };
  /** The run's CloudWatch metrics, as its log carried them (embedded metric format). */
  metrics: EmfRecord[];
  hub: { cfg: string; ers: string; hrsys: string; state: string; queues: Record<string, string> };
  queries: { intakeJob: string; statuses: string; statusCommand: string };
  seconds: number;
}

/** What the summary says of a run, as the task's exit codes document it: a killed or stopped run is resumable, never ExecutionFailed. */
export function runStatus(
  run: Pick<TaskRunResult, "exitCode" | "signal" | "finalEvent"> & { interrupted?: NodeJS.Signals | null },
  intakeJob: Pick<IntakeJobRow, "status"> | null,
): string {
  // HUB_INTAKE_JOB holds completed runs only: a failed one ends run.done with exit 3.
  if (run.finalEvent === "run.done")
    return intakeJob?.status ?? (run.exitCode === 0 ? "ExecutionCompleted" : "ExecutionFailed");
  if (run.finalEvent === "run.refused") return "Refused (nothing was touched; fix the problem and run again)";
  // Ctrl-C on `npm start`: the task was passed the signal and stopped cleanly (local/interrupt.ts).
  if (run.interrupted && run.finalEvent === "run.stopped")
    return `Stopped (${run.interrupted}): resumable (the next start resumes the transaction)`;
  if (run.signal) return `Stopped (killed by ${run.signal}; resumable: the next run resumes the transaction)`;
  if (run.finalEvent === "run.stopped" || run.exitCode === 1)
    return "Stopped (resumable: the next run resumes the transaction)";
  if (run.exitCode === 3) return "ExecutionFailed";
  return `Stopped (task exit code ${run.exitCode} without its final log line; resumable: the next run resumes the transaction)`;
}

type Changes = NonNullable<IntakeJobRow["changes"]>;

/**
 * What the run exported: a client's first run (no watermark yet) is a full load from idl_date, whatever number of
 * rows it found; later runs are incremental, or full when more rows changed than incremental mode takes.
 */
export function exportMode(c: Changes): string {
  if (c.firstLoad) return `full (first load from idl_date ${c.since})`;
  if (c.mode === "full")
    return `full (more changed rows since ${c.since} than incremental mode takes: every employee mapped)`;
  return `incremental (the employees changed since ${c.since})`;
}

/** How the run found the changed employees (in which publish tables), and what a schema without the changed_at indexes cost it. */
export function changeLookup(c: Changes): string {
  const n = (v: number) => v.toLocaleString("en-US");
  const capped = c.limit !== undefined && c.changedRows > c.limit;
  const tables = Object.entries(c.rowsByTable ?? {})
    .map(([t, v]) => `${t} ${n(v)}`)
    .join(", ");
  const rows = capped
    ? `more than ${n(c.limit!)} changed rows (incremental mode's limit) in the publish tables`
    : `${n(c.changedRows)} changed rows in the publish tables${tables ? ` (${tables})` : ""}`;
  const found = `${c.firstLoad ? "full (first load)" : `${c.mode} mode`}: ${rows}, found in ${c.seconds} s, ${n(c.chunks)} chunk statement(s)`;
  if (c.missingIndexes.length === 0) return `${found} (through the changed_at indexes)`;
  return `${found}; no changed_at index on ${c.missingIndexes.join(", ")}: each scanned in full (task/README.md, "Publish schema indexes")`;
}

/** `ACME_APAC_QA (5b1e7c2a-9d4f-4a6b-8c3e-1f2a3b4c5d6e)`, or the id alone when its code is not known. */
function tenantName(id: string, codes: Record<string, string>): string {
  return codes[id] ? `${codes[id]} (${id})` : id;
}

/** This run's count of a metric in one hub region, from its EMF lines; undefined when the run wrote none. */
function regionCount(metrics: EmfRecord[], region: string, metric: string): number | undefined {
  const value = metrics.find((m) => m.Region === region)?.[metric];
  return typeof value === "number" ? value : undefined;
}

/** What a start deleted because the stack config no longer has it: for its progress line and its summary. */
export function removedParts(r: Removed): string[] {
  const n = (v: number) => v.toLocaleString("en-US");
  return [
    r.hubTenantIds.length
      ? `hub tenant(s) ${r.hubTenantIds.map((id) => tenantName(id, r.hubTenantCodes ?? {})).join(", ")} (${n(r.messages)} unsent message(s) discarded)`
      : "",
    r.rows.length ? `${r.rows.length} config row(s)` : "",
    r.connections.length ? `connection record(s) ${r.connections.join(", ")}` : "",
  ].filter(Boolean);
}

/** `metrics`: the run's CloudWatch metrics line by line (`local --metrics`; `--json` has them always). */
export function formatSummary(s: LocalSummary, options: { metrics?: boolean } = {}): string {
  const rel = (p: string) => path.relative(process.cwd(), p) || p;
  const n = (v: number) => v.toLocaleString("en-US");
  const j = s.intakeJob;
  const lines = [
    "",
    `Job              ${s.jobName}`,
    `Transaction id   ${s.transactionId ?? "-"}`,
    `Status           ${s.status}${s.exitCode !== 0 ? ` (task exit code ${s.exitCode})` : ""}`,
  ];
  // Why, in the run's own words: each line of a refusal's problems.
  if (s.reason)
    s.reason
      .split("\n")
      .forEach((line, i) => lines.push(`${i === 0 ? "Reason           " : "                 "}${line}`));
  if (s.unrecorded.length)
    lines.push(
      `Sent again       ${n(s.unrecorded.length)} message(s) the hub acknowledged could not be recorded as published (the database did not answer in time): the next start sends them again under the same messageIds (the task log's publish.unrecorded line lists them)`,
    );
  lines.push(
    `Employees        ${s.firstRun ? `${n(s.seeded)} seeded (first start)` : `${n(s.changed)} changed in the sample data since the last start`}`,
  );
  if (!s.firstRun && s.seeded)
    lines.push(`                 ${n(s.seeded)} seeded for the new platform region(s) ${s.seededRegions.join(", ")}`);
  if (s.changes) lines.push(`Export           ${exportMode(s.changes)}`);
  const removed = removedParts(s.removed);
  if (removed.length) lines.push(`Removed          ${removed.join("; ")} (no longer in the stack config)`);
  const c = s.counts;
  if (c) {
    lines.push(
      "",
      `Counts per phase (${s.resumed ? "the resumed transaction, its earlier starts included" : "this run"}${s.countsSoFar ? ", so far: it stopped before the end" : ""})`,
      `  extract        ${n(c.extracted)} employees in ${n(c.messages)} messages`,
      s.countsSoFar
        ? `  publish        ${n(c.published)} published (the next run publishes the rest)`
        : `  publish        ${n(c.published)} published, ${n(c.failed)} failed, ${n(c.heldBack)} held back`,
      `  ERS            ${n(c.ersEntities)} entities`,
    );
    if (j)
      lines.push(
        `  statuses       ${
          Object.entries(j.statusCounts)
            .map(([k, v]) => `${k} ${n(v)}`)
            .join(", ") || "-"
        }`,
      );
    if (s.changes) lines.push(`  changes        ${changeLookup(s.changes)}`);
  }
  if (j?.unknownCodes) {
    const fields = Object.entries(j.unknownCodes.fields);
    lines.push(
      `  CLS check      ${fields.length ? `unknown codes in ${fields.map(([f, r]) => `${f} (${r.examples.map((e) => e.code).join(", ")})`).join("; ")}` : "every code is in the CLS load sheet"} (${j.unknownCodes.mode} mode)`,
    );
    if (fields.length) {
      lines.push(
        `                 these codes are not in the CLS load sheet ${rel(j.unknownCodes.sheet)}: the hub cannot translate them.`,
        `                 ${j.unknownCodes.mode === "strict" ? "Strict mode holds their messages back" : "Report mode sends them all the same"} until the sheet has them (cls/README.md).`,
      );
    }
  }
  // A resumed run's metrics count the whole transaction; the emulator's queue only what this start sent.
  const whose = s.resumed ? "transaction" : "this run";
  lines.push(
    "",
    s.resumed
      ? "Per hub region: the resumed transaction's messages (its metrics, every start of it), and what the emulator's queue holds since this start"
      : "Per hub region: this run's messages (its metrics), and what the emulator's queue holds since this start",
  );
  for (const [region, r] of Object.entries(s.regions)) {
    const count = (metric: string) => regionCount(s.metrics, region, metric);
    const run =
      count(METRICS.published) === undefined
        ? `${whose}: -`
        : `${whose}: ${n(count(METRICS.published)!)} published, ${n(count(METRICS.failed) ?? 0)} failed`;
    lines.push(
      `  ${region.padEnd(5)} ${r.destination.padEnd(18)} ${r.queueName.padEnd(22)} ${run};  ${s.resumed ? "this start's queue" : "queue"}: ${n(r.messages)} messages, ${r.duplicates} duplicates, ${r.rejected} rejected`,
    );
  }
  const rules = Object.entries(s.routingRules).map(([t, c]) => `${tenantName(t, s.hubTenantCodes)} ${c}`);
  lines.push(`  routing rules posted, per hub tenant: ${rules.join(", ") || "-"}`);
  const values = s.metrics.flatMap(formatEmfRecord);
  if (options.metrics) {
    lines.push(
      "",
      `Metrics (CloudWatch namespace ${METRIC_NAMESPACE}, from the task's log lines in the embedded metric format)`,
    );
    for (const line of values) lines.push(`  ${line}`);
    if (s.metrics.length === 0) lines.push("  none: the task ended before writing them (its log says why)");
  } else {
    lines.push(
      "",
      `Metrics          ${values.length ? `${values.length} values in CloudWatch namespace ${METRIC_NAMESPACE}` : "none: the task ended before writing them (its log says why)"} ('--metrics' lists them; '--json' has them)`,
    );
  }
  lines.push(
    "",
    "Files",
    `  bucket         ${rel(s.files.bucket)}/`,
    `  definition     ${rel(s.files.definition)}`,
    `  scripts        ${rel(s.files.scripts)}`,
    `  CLS sheet      ${rel(s.files.clsSheet)} (and .xlsx; the hub checklist beside it)`,
    `  connections    ${rel(s.files.connections)}/`,
    `  database       ${rel(s.files.postgres)}/`,
    `  task log       ${rel(s.files.taskLog)}`,
    "",
    "Look closer",
    `  ${s.queries.statusCommand}`,
  );
  // The psql lines only while the database runs (--keep): otherwise their port is closed already.
  if (s.database.psql)
    lines.push(`  connect: ${s.database.psql}`, `  psql: ${s.queries.intakeJob}`, `  psql: ${s.queries.statuses}`);
  else
    lines.push("  (to query the database with psql: 'npm start -- --keep' keeps it running and prints how to connect)");
  lines.push("  ('npm start' again exports what changed)", "");
  return lines.join("\n");
}
