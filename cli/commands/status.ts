import { defineCommand, intOption } from "../command";
import { UserError, UsageError } from "../../core/errors";
import { clientTables, schemaOnly, TABLES } from "../../core/naming";
import { loadFromOptions, stackOptions } from "../stackOptions";
import {
  DATABASE_DETAILS,
  DATABASE_OPTIONS,
  databaseLine,
  openDatabase,
  shellWord,
  type CommandDatabase,
  type DatabaseValues,
} from "../database";
import {
  completedRuns,
  knownJobs,
  latestIntakeJobs,
  latestOutcome,
  rowsHeldBack,
  runHistory,
  runsInProgress,
  setAsideMessages,
  transactionMessages,
  type HistoryRow,
  type MessageRow,
  type RunCounts,
  type RunInProgress,
  type RunOutcome,
} from "../../operate/status";
import { badRowLines } from "../../task/phases/badRows";
import { reportLines } from "../../cls/report";
import { redact, redactDeep, cut } from "../../core/redact";

export default defineCommand({
  summary:
    "Show a job's latest run first, whatever its outcome, with its reason; then its completed runs (HUB_INTAKE_JOB) with publish statuses, unknown CLS codes and bad warehouse rows, its set-aside messages and held-back rows, and its run history (every outcome); --transaction lists the messages the hub received under a transaction id, and the others",
  options: {
    "job-name": {
      type: "string",
      value: "NAME",
      description: "The pipeline's job_name (HUB_INTAKE_JOB.job_name)",
      defaultText: "the stack config's hubExport:jobName",
      example: "--job-name HRSYS_EMPL_HUB_ACME_202611_QA",
    },
    ...stackOptions,
    ...DATABASE_OPTIONS,
    transaction: {
      type: "string",
      value: "ID",
      description:
        "List the messages the hub received under this transaction id (those the run published), then the ones it tried and did not publish, with their reasons; 'latest' for the latest run's",
      example: "--transaction 0b9f8e2a-3c4d-4e5f-8a6b-7c8d9e0f1a2b",
    },
    limit: {
      type: "string",
      value: "N",
      description: "How many of the latest runs to list",
      default: "10",
      example: "--limit 50",
    },
    json: { type: "boolean", description: "Print the result as one JSON object", example: "--json" },
  },
  details: [
    "The latest run comes first, whatever its outcome, with its reason. The staging schema comes from the stack config (--stack/--file); its secrets are not needed.",
    DATABASE_DETAILS,
    "Set PGPASSWORD instead of putting the password in --database-url to keep it out of the shell history.",
  ],
  examples: [
    {
      command: "npx hub-export status",
      does: "the latest runs of the embedded default's job (.local/, the qa stack's config), with per-status message counts",
    },
    {
      command: "npx hub-export status --stack prod",
      does: "the same on the prod stack's warehouse (hubExport:database; the password from PGPASSWORD or ~/.pgpass)",
    },
    {
      command: "npx hub-export status --transaction <id>",
      does: "the messages the hub received under that transaction id (as its logs show it), then those the run did not publish and why",
    },
    {
      command: "npx hub-export status --transaction latest",
      does: "the same for the latest run, whatever its outcome (the one 'status' shows first)",
    },
  ],
  async run(values, io) {
    const limit = intOption("limit", values.limit);
    if (
      values.transaction !== undefined &&
      values.transaction !== "latest" &&
      !/^[0-9a-f-]{36}$/i.test(values.transaction)
    )
      throw new UsageError("--transaction must be a transaction id (UUID), or latest");
    // The staging schema comes from the stack config; its secrets (ciphertext without the CLI) are not needed.
    const config = loadFromOptions(values);
    // The stack names its job: --job-name is for another pipeline's job in the same staging schema.
    const jobName = values["job-name"] ?? config.jobName;
    const schema = schemaOnly(config.stagingSchema);
    // The stack's warehouse with --stack/--file, else the embedded default's (cli/database.ts); named first.
    const db = await openDatabase(values, config, "status");
    const client = db.client;
    try {
      const latest = await latestOutcome(client, schema, jobName);
      const running = await runsInProgress(client, schema, jobName);
      if (values.transaction) {
        const id = values.transaction === "latest" ? latestRun(latest, running)?.transactionId : values.transaction;
        if (!id)
          throw new UserError(`no run of ${cut(jobName)} in ${schema} has a transaction yet (see 'hub-export status')`);
        return await showTransaction(db, schema, jobName, id, values.json ?? false, io.stdout);
      }
      const jobs = await latestIntakeJobs(client, schema, jobName, limit);
      const history = await runHistory(client, schema, jobName, limit);
      const clientName = history[0]?.clientName ?? jobs[0]?.clientName ?? config.clientName;
      const aside = await setAsideMessages(client, schema, clientName);
      const held = await rowsHeldBack(client, schema, clientName);
      if (jobs.length === 0 && running.length === 0 && history.length === 0) {
        // A mistyped job name must not look like a job that never ran.
        const known = await knownJobs(client, schema);
        if (!known.includes(jobName)) {
          throw new UserError(
            known.length
              ? [`no job ${cut(jobName)} in ${schema}; the jobs known there are:`, ...known.map((j) => `  ${j}`)]
              : [`no job ${cut(jobName)} in ${schema}: no job has run there yet`],
          );
        }
      }
      const last = latestRun(latest, running);
      if (values.json) {
        io.stdout.write(
          JSON.stringify(
            redactDeep({
              database: db.name,
              jobName,
              schema,
              latestRun: last,
              runsInProgress: running,
              intakeJobs: jobs,
              setAside: aside,
              rowsHeldBack: held,
              history,
            }),
            null,
            2,
          ) + "\n",
        );
        return 0;
      }
      const out: string[] = [
        databaseLine(db).trimEnd(),
        `Job ${jobName} in schema ${schema}`,
        "",
        ...latestRunLines(last, transactionCommand(values)),
      ];
      if (running.length)
        out.push("", `Unfinished runs (${schema}.${TABLES.run}): working now, or stopped (the next run resumes them)`);
      for (const r of running) {
        // An unfinished run was stopped (or is working now): its last stop says why.
        const stopped = history.find((h) => h.transactionId === r.transactionId && h.event === "Stopped");
        const why = stopped ? (stopped.detail as { reason?: string }).reason : undefined;
        out.push(
          `  in progress: ${r.transactionId}  phase ${r.phase}  since ${r.startedAt.toISOString()}${why ? `  stopped: ${why} (the next run resumes it)` : ""}`,
        );
      }
      out.push("", `Completed runs (${schema}.${TABLES.intakeJob}), newest first`);
      if (jobs.length === 0) out.push("  none yet (HUB_INTAKE_JOB holds completed runs only)");
      else {
        out.push(
          `  ${"finished at".padEnd(24)} ${"transaction id".padEnd(36)}  ${"status".padEnd(18)}  extracted  messages  published  failed  held  ers   publish statuses`,
        );
        for (const j of jobs) {
          const statuses =
            Object.entries(j.statusCounts)
              .map(([s, n]) => `${s} ${n}`)
              .join(", ") || "-";
          // A row without details in the run history (not written by this project) shows its ids only.
          const c = j.counts;
          const n = (value: number | undefined, width: number) => String(value ?? "-").padStart(width);
          out.push(
            `  ${(j.finishedAt?.toISOString() ?? "-").padEnd(24)} ${j.transactionId}  ${j.status.padEnd(18)}  ${n(c?.extracted, 9)}  ${n(c?.messages, 8)}  ${n(c?.published, 9)}  ${n(c?.failed, 6)}  ${n(c?.heldBack, 4)}  ${n(c?.ersEntities, 4)}  ${statuses}`,
          );
          if (j.error) out.push(`      error: ${j.error}`);
          if (j.unknownCodes && Object.keys(j.unknownCodes.fields).length) {
            out.push(`      unknown CLS codes (${j.unknownCodes.mode} mode, sheet ${j.unknownCodes.sheet}):`);
            for (const line of reportLines(j.unknownCodes.fields)) out.push(`        ${line}`);
          }
          if (j.setAside)
            out.push(
              `      warning: ${j.setAside} message(s) set aside by this run (refused for good by set_aside_after_runs runs): listed below`,
            );
          if (j.badRows) for (const [, line] of badRowLines(j.badRows)) out.push(`      bad rows: ${line}`);
        }
      }
      out.push(
        "",
        `Set-aside messages (${schema}.${clientTables(clientName).status}): no run retries them; 'hub-export retry' or 'hub-export discard' --message-id decides`,
        ...listed(aside.total, aside.messages.map(formatMessage)),
        "",
        `Warehouse rows held back (${schema}.${clientTables(clientName).rowsHeldBack}): not published until fixed; each run looks at them again`,
        ...listed(
          held.total,
          held.rows.map(
            (r) =>
              `${JSON.stringify(r.employeeId)}  ${r.kind.padEnd(13)}  since ${r.firstHeldAt.toISOString()}  ${r.reason}`,
          ),
        ),
        "",
        `Run history (${schema}.${TABLES.runHistory}): every outcome, newest first`,
      );
      if (history.length === 0) out.push("  none yet");
      for (const h of history) out.push(`  ${formatHistory(h)}`);
      io.stdout.write(shown(out));
      return 0;
    } finally {
      await db.close();
    }
  },
});

/**
 * The job's latest run, whatever its outcome (ExecutionCompleted, ExecutionFailed, Stopped, Refused, or InProgress: a
 * run working now, or killed, that started after the last outcome); `resumable`: the next run resumes it.
 */
function latestRun(latest: RunOutcome | null, running: RunInProgress[]) {
  const working = running.filter((r) => !latest || r.startedAt > latest.recordedAt).at(-1);
  if (working)
    return {
      transactionId: working.transactionId,
      outcome: "InProgress",
      at: working.startedAt,
      by: null as string | null,
      reason: null as string | null,
      counts: null as RunCounts | null,
      countsSoFar: false,
      unrecorded: [] as string[],
      resumable: true,
      phase: working.phase,
    };
  if (!latest) return null;
  const unfinished = running.find((r) => r.transactionId === latest.transactionId);
  return {
    transactionId: latest.transactionId,
    outcome: latest.event,
    at: latest.recordedAt,
    by: latest.actor,
    reason: latest.reason,
    counts: latest.counts,
    countsSoFar: latest.countsSoFar,
    unrecorded: latest.unrecorded,
    resumable: Boolean(unfinished),
    phase: unfinished?.phase ?? null,
  };
}

/** The block that opens `status`: the latest run, its reason, its counts, and how to see each of its messages. */
function latestRunLines(r: ReturnType<typeof latestRun>, transactionCommand: (id: string) => string): string[] {
  if (!r) return ["Latest run: none yet"];
  const tx = r.transactionId ? `, transaction ${r.transactionId}` : " (before it opened a transaction)";
  const lines =
    r.outcome === "InProgress"
      ? [
          `Latest run: in progress since ${r.at.toISOString()}${tx}, phase ${r.phase} (working now; if it was killed, the next run resumes it)`,
        ]
      : [
          `Latest run: ${r.outcome} at ${r.at.toISOString()}${tx}${r.by ? ` (by ${r.by})` : ""}${r.resumable ? `; unfinished (phase ${r.phase}): the next run resumes it` : ""}`,
        ];
  if (r.reason) lines.push(`  reason: ${r.reason}`);
  if (r.counts) lines.push(`  ${r.countsSoFar ? "so far" : "counts"}: ${countsText(r.counts, r.countsSoFar)}`);
  if (r.unrecorded.length)
    lines.push(
      `  sent again: ${r.unrecorded.length} message(s) the hub acknowledged could not be recorded as published: the next run sends them again under the same messageIds: ${cut(r.unrecorded.join(", "), 400)}`,
    );
  if (r.transactionId && r.outcome !== "ExecutionCompleted")
    lines.push(`  each message and its reason: ${transactionCommand(r.transactionId)}`);
  return lines;
}

/** A run's counts; so far (a stopped run's), without failed and held back, which only its end knows. */
function countsText(c: RunCounts, soFar: boolean): string {
  const middle = soFar ? "" : `, failed ${c.failed}, held back ${c.heldBack}`;
  return `extracted ${c.extracted}, messages ${c.messages}, published ${c.published}${middle}, ERS entities ${c.ersEntities}`;
}

/** `npx hub-export status [the same database and job options] --transaction <id>`: to paste as printed. */
function transactionCommand(values: DatabaseValues & { "job-name"?: string }): (id: string) => string {
  const args: string[] = [];
  for (const key of ["stack", "file", "dir", "user", "job-name"] as const)
    if (values[key] !== undefined) args.push(`--${key}`, shellWord(values[key]));
  // The URL may hold a password: never printed; the operator gives it again.
  if (values["database-url"] !== undefined) args.push("--database-url", "<URL>");
  return (id) => ["npx hub-export status", ...args, "--transaction", id].join(" ");
}

/**
 * `2026-11-22T03:00:12.000Z  <transaction>  ExecutionFailed  by export-task  published 10, failed 2: <error>`; an
 * operator's action on a message names it: `Discard  by alice  message <id> (was SET_ASIDE): <reason>`.
 */
function formatHistory(h: HistoryRow): string {
  const d = h.detail as Record<string, string | number | null | undefined>;
  const counts = (["extracted", "published", "failed", "setAside"] as const)
    .filter((k) => typeof d[k] === "number" && (k !== "setAside" || d.setAside))
    .map((k) => `${k === "setAside" ? "set aside" : k} ${d[k]}`);
  return [
    h.recordedAt.toISOString().padEnd(24),
    (h.transactionId ?? "-").padEnd(36),
    h.event.padEnd(18),
    h.actor ? `by ${h.actor}` : "",
    d.messageId
      ? `message ${d.messageId} (was ${d.previousStatus})${d.reason ? `: ${d.reason}` : ""}`
      : counts.join(", "),
    // An operator's reason is part of the message line above; a stopped run's reason (e.g. SIGTERM) comes last.
    d.error ? `: ${d.error}` : !d.messageId && d.reason ? `: ${d.reason}` : "",
  ]
    .filter(Boolean)
    .join("  ");
}

/** The first of `total` items, one a line, then how many more; or `none`. */
function listed(total: number, lines: string[]): string[] {
  const more = total > lines.length ? [`... and ${total - lines.length} more`] : [];
  return (total === 0 ? ["none"] : [...lines, ...more]).map((l) => `  ${l}`);
}

/** `<messageId>  SET_ASIDE  tenant <id>  <destination>  1 record(s): E1  attempts 2  <reason>` */
function formatMessage(m: MessageRow): string {
  const employees =
    m.employeeIds.length > 3
      ? `${m.employeeIds.slice(0, 3).join(", ")} +${m.employeeIds.length - 3}`
      : m.employeeIds.join(", ");
  return `${m.messageId}  ${m.status.padEnd(10)}  tenant ${m.hubTenantId}  ${m.hubDestination}  ${m.recordCount} record(s): ${employees}  attempts ${m.attempts}${m.reason ? `  ${m.reason}` : ""}`;
}

/**
 * The run's messages, as its _STATUS rows name it: a message carries the transaction id of the run that publishes it,
 * so the published ones are exactly what the hub received under the id (a standard queue may hold one twice, under
 * its one messageId). Written a page at a time: a run may have published millions.
 */
async function showTransaction(
  db: CommandDatabase,
  schema: string,
  jobName: string,
  transactionId: string,
  json: boolean,
  stdout: NodeJS.WritableStream,
): Promise<number> {
  const client = db.client;
  const { rows } = await client.query<{ plat_client_name: string; status: string }>(
    `SELECT plat_client_name, status FROM ${completedRuns(schema)} WHERE transaction_id = lower($1::text) AND job_name = $2 AND plat_client_name IS NOT NULL
     UNION ALL SELECT plat_client_name, 'in progress' FROM ${schema}.${TABLES.run} WHERE transaction_id = $1::uuid AND job_name = $2
     UNION ALL (SELECT plat_client_name, event FROM ${schema}.${TABLES.runHistory} WHERE transaction_id = $1::uuid AND job_name = $2 ORDER BY recorded_at DESC, history_id DESC LIMIT 1)`,
    [transactionId, jobName],
  );
  if (rows.length === 0)
    throw new UserError(
      `no run ${transactionId} of job ${cut(jobName)} in ${schema}.${TABLES.intakeJob}, ${TABLES.runHistory} or ${TABLES.run}`,
    );
  const clientName = rows[0].plat_client_name;
  // The run's own outcome: why it did not complete, and its counts (an unfinished run: its last stop's).
  const outcome = await latestOutcome(client, schema, jobName, transactionId);
  const reason = rows[0].status === "ExecutionCompleted" ? null : (outcome?.reason ?? null);
  // Reasons come from hub answers: every line and JSON value is redacted (core/redact.ts).
  const write = (text: string) => stdout.write(text);
  if (json) {
    const head = {
      database: db.name,
      jobName,
      transactionId,
      status: rows[0].status,
      reason,
      counts: outcome?.counts ?? null,
      countsSoFar: outcome?.countsSoFar ?? false,
    };
    write(`${JSON.stringify(redactDeep(head), null, 2).replace(/\n}$/, ",\n")}`);
  } else {
    const c = outcome?.counts;
    write(
      shown([
        databaseLine(db).trimEnd(),
        `Run ${transactionId} of ${jobName}: ${rows[0].status}${reason ? `: ${reason}` : ""}`,
        ...(c
          ? [
              outcome.countsSoFar
                ? `  so far: ${countsText(c, true)} (it stopped before the end)`
                : `  ${countsText(c, false)}`,
            ]
          : []),
      ]),
    );
  }
  for (const received of [true, false]) {
    let n = 0;
    if (json) write(`  ${JSON.stringify(received ? "received" : "notPublished")}: [`);
    else
      write(received ? "Received by the hub under this transaction id:\n" : "Tried by this run and not published:\n");
    for await (const page of transactionMessages(client, schema, clientName, transactionId, received)) {
      for (const m of page) {
        write(json ? `${n ? "," : ""}\n    ${JSON.stringify(redactDeep(m))}` : shown([`  ${formatMessage(m)}`]));
        n++;
      }
    }
    if (json) write(`${n ? "\n  " : ""}]${received ? "," : ""}\n`);
    else write(`  (${n} message${n === 1 ? "" : "s"})\n`);
  }
  if (json) write("}\n");
  return 0;
}

/** The lines as the terminal gets them: reasons and details come from hub answers, so each line is redacted. */
function shown(lines: string[]): string {
  return lines.map((l) => redact(l)).join("\n") + "\n";
}
