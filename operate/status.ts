/**
 * What a run did, read back from the staging schema: HUB_INTAKE_JOB rows (completed runs), HUB_EXPORT_RUN_HISTORY
 * rows (every outcome and operator action) and per-status counts of _STATUS.
 */
import type { Client } from "pg";
import { TABLES, clientTables } from "../core/naming";
import type { CodeCheckSummary } from "../task/cls/codeCheck";
import type { BadRowsReport } from "../task/phases/badRows";
import type { ExtractTotals } from "../task/phases/extract";
import { MESSAGE_STATUS } from "../task/warehouse/messageStatus";
import { UUID } from "../core/uuid";
import { ident } from "./runLock";

/** A HUB_INTAKE_JOB row (a completed run) with its details from HUB_EXPORT_RUN_HISTORY. */
export interface IntakeJobRow {
  transactionId: string;
  jobName: string;
  /** null, as the times and counts: a row without details in the run history (another pipeline's, or hand-made). */
  clientName: string | null;
  status: string;
  startedAt: Date | null;
  finishedAt: Date | null;
  counts: {
    extracted: number;
    messages: number;
    published: number;
    failed: number;
    heldBack: number;
    ersEntities: number;
  } | null;
  error: string | null;
  /** The CLS check of the run (HUB_EXPORT_RUN_HISTORY detail.unknownCodes); null when the run had none. */
  unknownCodes: CodeCheckSummary | null;
  /** Messages the run set aside, and the warehouse rows it found bad (detail.setAside, detail.badRows). */
  setAside: number;
  badRows: BadRowsReport | null;
  /** How the run found the changed employees and what that cost (detail.changes); null for a run resumed past its extract. */
  changes: NonNullable<ExtractTotals["changes"]> | null;
  /** Per publish status, from HUB_<CLIENT>_MESSAGES_STATUS. */
  statusCounts: Record<string, number>;
}

/** A message as _STATUS and _ARCHIVE hold it. */
export interface MessageRow {
  messageId: string;
  /** PUBLISHED, FAILED, HELD_BACK, SET_ASIDE, SUPERSEDED, DISCARDED, PENDING (task/warehouse/messageStatus.ts). */
  status: string;
  hubTenantId: string;
  hubDestination: string;
  recordCount: number;
  employeeIds: string[];
  attempts: number;
  reason: string | null;
  updatedAt: Date;
  /** The transaction that extracted it (the one it carries is the _STATUS row's). */
  extractedBy: string;
}

/** A warehouse row the extract holds back (HUB_<CLIENT>_ROWS_HELD_BACK). */
export interface HeldRow {
  employeeId: string;
  kind: string;
  reason: string;
  copies: number;
  firstHeldAt: Date;
  heldAt: Date;
  heldBy: string;
}

export interface RunInProgress {
  transactionId: string;
  phase: string;
  startedAt: Date;
}

/**
 * A relation of the completed runs of every job in the staging schema, one row per HUB_INTAKE_JOB row: the
 * specification's columns (job_name, transaction_id) with the run's details from its ExecutionCompleted row in
 * HUB_EXPORT_RUN_HISTORY (null where it has none, e.g. a row another pipeline wrote). The intake table is shared and
 * its transaction_id may be text or uuid; the history is ours. Use as `SELECT ... FROM ${completedRuns(schema)} ...`.
 */
export function completedRuns(schema: string): string {
  const s = ident(schema);
  const count = (key: string) => `(h.detail ->> '${key}')::int`;
  return `(SELECT lower(j.transaction_id::text) AS transaction_id, j.job_name, h.plat_client_name, 'ExecutionCompleted'::text AS status,
                  (h.detail ->> 'startedAt')::timestamptz AS started_at, h.recorded_at AS finished_at, h.detail ->> 'buildNumber' AS build_number,
                  ${count("extracted")} AS extracted_count, ${count("messages")} AS message_count, ${count("published")} AS published_count,
                  ${count("failed")} AS failed_count, ${count("heldBack")} AS held_back_count, ${count("retried")} AS retried_count,
                  ${count("ersEntities")} AS ers_entity_count, h.detail ->> 'error' AS error, h.detail -> 'unknownCodes' AS unknown_codes,
                  ${count("setAside")} AS set_aside, h.detail -> 'badRows' AS bad_rows, h.detail -> 'changes' AS changes
             FROM ${s}.${TABLES.intakeJob} j
             LEFT JOIN LATERAL (SELECT plat_client_name, recorded_at, detail FROM ${s}.${TABLES.runHistory} r
                                 WHERE r.transaction_id::text = lower(j.transaction_id::text) AND r.event = 'ExecutionCompleted'
                                 ORDER BY r.recorded_at DESC LIMIT 1) h ON true) AS completed_runs`;
}

/** The job's latest completed runs, newest first; counts null for a row without details in the run history. */
export async function latestIntakeJobs(
  client: Client,
  schema: string,
  jobName: string,
  limit = 10,
): Promise<IntakeJobRow[]> {
  const s = ident(schema);
  const { rows: jobs } = await client.query<IntakeJobRow>(
    `SELECT transaction_id AS "transactionId", job_name AS "jobName", plat_client_name AS "clientName", status,
            started_at AS "startedAt", finished_at AS "finishedAt",
            CASE WHEN plat_client_name IS NOT NULL THEN json_build_object('extracted', extracted_count, 'messages', message_count,
              'published', published_count, 'failed', failed_count, 'heldBack', held_back_count, 'ersEntities', ers_entity_count)
            END AS counts, error, unknown_codes AS "unknownCodes", coalesce(set_aside, 0) AS "setAside", bad_rows AS "badRows",
            changes, '{}'::json AS "statusCounts"
       FROM ${completedRuns(s)} WHERE job_name = $1 ORDER BY finished_at DESC NULLS LAST, transaction_id LIMIT $2`,
    [jobName, limit],
  );
  // A transaction id of ours is a UUID; another pipeline's rows may hold anything there.
  const ours = jobs.filter((j) => UUID.test(j.transactionId));
  // One grouped query per client's STATUS table for all listed transactions (those with details: the client is known).
  for (const clientName of new Set(ours.flatMap((j) => (j.clientName ? [j.clientName] : [])))) {
    const ids = ours.filter((j) => j.clientName === clientName).map((j) => j.transactionId);
    const { rows: counts } = await client.query<{ transaction_id: string; status: string; n: number }>(
      `SELECT transaction_id, status, count(*)::int AS n FROM ${s}.${ident(clientTables(clientName).status)}
        WHERE transaction_id = ANY($1::uuid[]) GROUP BY 1, 2`,
      [ids],
    );
    for (const c of counts) jobs.find((j) => j.transactionId === c.transaction_id)!.statusCounts[c.status] = c.n;
  }
  return jobs;
}

export async function runsInProgress(client: Client, schema: string, jobName: string): Promise<RunInProgress[]> {
  const { rows } = await client.query<RunInProgress>(
    `SELECT transaction_id AS "transactionId", phase, started_at AS "startedAt" FROM ${ident(schema)}.${TABLES.run}
      WHERE job_name = $1 ORDER BY started_at`,
    [jobName],
  );
  return rows;
}

const MESSAGE_COLUMNS = `s.message_id AS "messageId", s.status, s.hub_tenant_id AS "hubTenantId", s.hub_destination AS "hubDestination",
  a.record_count AS "recordCount", a.employee_ids AS "employeeIds", s.attempts, s.reason, s.updated_at AS "updatedAt",
  a.transaction_id AS "extractedBy"`;

/**
 * The messages of a transaction as _STATUS holds them (a message carries the transaction id of the run that publishes
 * it, so the PUBLISHED ones are what the hub received under that id), by messageId, a page at a time: `received` the
 * published ones, otherwise the others (failed, held back, set aside, superseded) with their reasons.
 */
export async function* transactionMessages(
  client: Client,
  schema: string,
  clientName: string,
  transactionId: string,
  received: boolean,
  pageSize = 1000,
): AsyncGenerator<MessageRow[]> {
  const t = clientTables(clientName);
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const { rows } = await client.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM ${ident(schema)}.${ident(t.status)} s JOIN ${ident(schema)}.${ident(t.archive)} a ON a.message_id = s.message_id
        WHERE s.transaction_id = $1 AND (s.status = '${MESSAGE_STATUS.published}') = $2 AND s.message_id > $3 ORDER BY s.message_id LIMIT $4`,
      [transactionId, received, after, pageSize],
    );
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1].messageId;
  }
}

/** The client's set-aside messages (no run retries them), oldest first, and how many there are. */
export async function setAsideMessages(
  client: Client,
  schema: string,
  clientName: string,
  limit = 100,
): Promise<{ total: number; messages: MessageRow[] }> {
  const t = clientTables(clientName);
  const from = `${ident(schema)}.${ident(t.status)} s JOIN ${ident(schema)}.${ident(t.archive)} a ON a.message_id = s.message_id WHERE s.status = '${MESSAGE_STATUS.setAside}'`;
  const { rows } = await client.query<MessageRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM ${from} ORDER BY s.updated_at, s.message_id LIMIT $1`,
    [limit],
  );
  const { rows: count } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from}`);
  return { total: count[0].n, messages: rows };
}

/** The warehouse rows the client's extract holds back now (duplicate or blank ids, mapping errors), and how many. */
export async function rowsHeldBack(
  client: Client,
  schema: string,
  clientName: string,
  limit = 100,
): Promise<{ total: number; rows: HeldRow[] }> {
  const table = `${ident(schema)}.${ident(clientTables(clientName).rowsHeldBack)}`;
  const { rows } = await client.query<HeldRow>(
    `SELECT employee_id AS "employeeId", kind, reason, copies, first_held_at AS "firstHeldAt", held_at AS "heldAt", held_by AS "heldBy"
       FROM ${table} ORDER BY kind, employee_id LIMIT $1`,
    [limit],
  );
  const { rows: count } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return { total: count[0].n, rows };
}

export interface HistoryRow {
  historyId: string;
  transactionId: string | null;
  clientName: string;
  event: string;
  recordedAt: Date;
  actor: string | null;
  detail: Record<string, unknown>;
}

/** The job's latest HUB_EXPORT_RUN_HISTORY rows, newest first. */
export async function runHistory(client: Client, schema: string, jobName: string, limit = 10): Promise<HistoryRow[]> {
  const { rows } = await client.query<HistoryRow>(
    `SELECT history_id::text AS "historyId", transaction_id AS "transactionId", plat_client_name AS "clientName", event,
            recorded_at AS "recordedAt", actor, coalesce(detail, '{}') AS detail FROM ${ident(schema)}.${TABLES.runHistory}
      WHERE job_name = $1 ORDER BY recorded_at DESC, history_id DESC LIMIT $2`,
    [jobName, limit],
  );
  return rows;
}

/** Every job name the staging schema has seen: finished runs, runs in progress, the run history. */
export async function knownJobs(client: Client, schema: string): Promise<string[]> {
  const s = ident(schema);
  const { rows } = await client.query<{ job_name: string }>(
    `SELECT job_name FROM ${s}.${TABLES.intakeJob} UNION SELECT job_name FROM ${s}.${TABLES.run}
      UNION SELECT job_name FROM ${s}.${TABLES.runHistory} ORDER BY 1`,
  );
  return rows.map((r) => r.job_name);
}

export type RunCounts = NonNullable<IntakeJobRow["counts"]>;

/**
 * How the job, or one of its transactions, last ended: its latest HUB_EXPORT_RUN_HISTORY outcome row (ExecutionCompleted,
 * ExecutionFailed, Stopped, Refused), with its own counts and reason.
 */
export interface RunOutcome {
  transactionId: string | null;
  recordedAt: Date;
  actor: string | null;
  event: string;
  counts: RunCounts | null;
  /** The counts are what a stopped run had done so far (detail.countsSoFar): failed and held back are not known yet. */
  countsSoFar: boolean;
  /** detail.error (ExecutionFailed) or detail.reason (Stopped, Refused). */
  reason: string | null;
  /** How the run found the changed employees (detail.changes); null for a run that did not reach its extract. */
  changes: IntakeJobRow["changes"];
  /**
   * Messages the hub acknowledged that a stopped run could not record as published (detail.unrecorded): the next run
   * sends them again.
   */
  unrecorded: string[];
}

export async function latestOutcome(
  client: Client,
  schema: string,
  jobName: string,
  transactionId?: string,
): Promise<RunOutcome | null> {
  const { rows } = await client.query<{
    transaction_id: string | null;
    event: string;
    recorded_at: Date;
    actor: string | null;
    detail: Record<string, unknown> | null;
  }>(
    `SELECT transaction_id, event, recorded_at, actor, detail FROM ${ident(schema)}.${TABLES.runHistory}
      WHERE job_name = $1 AND ($2::uuid IS NULL OR transaction_id = $2::uuid)
      AND event IN ('ExecutionCompleted', 'ExecutionFailed', 'Stopped', 'Refused') ORDER BY recorded_at DESC, history_id DESC LIMIT 1`,
    [jobName, transactionId ?? null],
  );
  const r = rows[0];
  if (!r) return null;
  const d = r.detail ?? {};
  const n = (key: string) => (typeof d[key] === "number" ? d[key] : 0);
  return {
    transactionId: r.transaction_id,
    recordedAt: r.recorded_at,
    actor: r.actor,
    event: r.event,
    counts:
      typeof d.extracted === "number"
        ? {
            extracted: n("extracted"),
            messages: n("messages"),
            published: n("published"),
            failed: n("failed"),
            heldBack: n("heldBack"),
            ersEntities: n("ersEntities"),
          }
        : null,
    countsSoFar: d.countsSoFar === true,
    reason: typeof d.error === "string" ? d.error : typeof d.reason === "string" ? d.reason : null,
    changes: (d.changes as IntakeJobRow["changes"]) ?? null,
    unrecorded: ((d.unrecorded as { messageIds?: unknown } | undefined)?.messageIds as string[] | undefined) ?? [],
  };
}
