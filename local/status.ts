/**
 * What a run did, read back from the staging schema: HUB_INTAKE_JOB rows (completed runs), HUB_EXPORT_RUN_HISTORY
 * rows (every outcome and operator action) and per-status counts of _STATUS.
 */
import type { Client } from "pg";
import { TABLES, clientTables } from "../core/naming";
import { HELD_BACK, type CodeCheckSummary } from "../task/cls/codeCheck";

/** A HUB_INTAKE_JOB row (a completed run) with its details from HUB_EXPORT_RUN_HISTORY. */
export interface IntakeJobRow {
  transactionId: string;
  jobName: string;
  /** null, as the times and counts: a row without details in the run history (another pipeline's, or hand-made). */
  clientName: string | null;
  status: string;
  startedAt: Date | null;
  finishedAt: Date | null;
  counts: { extracted: number; messages: number; published: number; failed: number; heldBack: number; ersEntities: number } | null;
  error: string | null;
  /** The CLS check of the run (HUB_EXPORT_RUN_HISTORY detail.unknownCodes); null when the run had none. */
  unknownCodes: CodeCheckSummary | null;
  /** Per publish status, from HUB_<CLIENT>_MESSAGES_STATUS. */
  statusCounts: Record<string, number>;
}

export interface FailedMessage {
  messageId: string;
  /** FAILED, or HELD_BACK by the strict CLS check. */
  status: string;
  hubTenantId: string;
  hubDestination: string;
  attempts: number;
  reason: string | null;
}

export interface RunInProgress {
  transactionId: string;
  phase: string;
  startedAt: Date;
}

const ident = (name: string) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`unsafe SQL identifier '${name}'`);
  return name;
};

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
                  ${count("ersEntities")} AS ers_entity_count, h.detail ->> 'error' AS error, h.detail -> 'unknownCodes' AS unknown_codes
             FROM ${s}.${TABLES.intakeJob} j
             LEFT JOIN LATERAL (SELECT plat_client_name, recorded_at, detail FROM ${s}.${TABLES.runHistory} r
                                 WHERE r.transaction_id::text = lower(j.transaction_id::text) AND r.event = 'ExecutionCompleted'
                                 ORDER BY r.recorded_at DESC LIMIT 1) h ON true) AS completed_runs`;
}

/** A transaction id of ours (a UUID); another pipeline's rows may hold anything there. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function latestIntakeJobs(client: Client, schema: string, jobName: string, limit = 10): Promise<IntakeJobRow[]> {
  const s = ident(schema);
  const { rows } = await client.query(
    `SELECT transaction_id, job_name, plat_client_name, status, started_at, finished_at, extracted_count, message_count,
            published_count, failed_count, held_back_count, ers_entity_count, error, unknown_codes
       FROM ${completedRuns(s)} WHERE job_name = $1 ORDER BY finished_at DESC NULLS LAST, transaction_id LIMIT $2`,
    [jobName, limit],
  );
  const jobs: IntakeJobRow[] = rows.map((r) => ({
    transactionId: r.transaction_id,
    jobName: r.job_name,
    clientName: r.plat_client_name,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    counts:
      r.plat_client_name === null
        ? null
        : { extracted: r.extracted_count, messages: r.message_count, published: r.published_count, failed: r.failed_count, heldBack: r.held_back_count, ersEntities: r.ers_entity_count },
    error: r.error,
    unknownCodes: r.unknown_codes ?? null,
    statusCounts: {},
  }));
  const ours = jobs.filter((j) => UUID.test(j.transactionId));
  // One grouped query per client's STATUS table for all listed transactions (those with details: the client is known).
  for (const clientName of new Set(ours.flatMap((j) => (j.clientName ? [j.clientName] : [])))) {
    const ids = ours.filter((j) => j.clientName === clientName).map((j) => j.transactionId);
    const { rows: counts } = await client.query(
      `SELECT transaction_id, status, count(*)::int AS n FROM ${s}.${ident(clientTables(clientName).status)}
        WHERE transaction_id = ANY($1::uuid[]) GROUP BY 1, 2`,
      [ids],
    );
    for (const c of counts) jobs.find((j) => j.transactionId === c.transaction_id)!.statusCounts[c.status] = c.n;
  }
  return jobs;
}

export async function runsInProgress(client: Client, schema: string, jobName: string): Promise<RunInProgress[]> {
  const { rows } = await client.query(
    `SELECT transaction_id, phase, started_at FROM ${ident(schema)}.${TABLES.run} WHERE job_name = $1 ORDER BY started_at`,
    [jobName],
  );
  return rows.map((r) => ({ transactionId: r.transaction_id, phase: r.phase, startedAt: r.started_at }));
}

export async function failedMessages(client: Client, schema: string, clientName: string, transactionId: string, limit = 1000): Promise<FailedMessage[]> {
  const { rows } = await client.query(
    `SELECT message_id, status, hub_tenant_id, hub_destination, attempts, reason FROM ${ident(schema)}.${ident(clientTables(clientName).status)}
      WHERE transaction_id = $1 AND status IN ('FAILED', '${HELD_BACK}') ORDER BY status, message_id LIMIT $2`,
    [transactionId, limit],
  );
  return rows.map((r) => ({ messageId: r.message_id, status: r.status, hubTenantId: r.hub_tenant_id, hubDestination: r.hub_destination, attempts: r.attempts, reason: r.reason }));
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
  const { rows } = await client.query(
    `SELECT history_id, transaction_id, plat_client_name, event, recorded_at, actor, detail FROM ${ident(schema)}.${TABLES.runHistory}
      WHERE job_name = $1 ORDER BY recorded_at DESC, history_id DESC LIMIT $2`,
    [jobName, limit],
  );
  return rows.map((r) => ({ historyId: String(r.history_id), transactionId: r.transaction_id, clientName: r.plat_client_name, event: r.event, recordedAt: r.recorded_at, actor: r.actor, detail: r.detail ?? {} }));
}

/** Every job name the staging schema has seen: finished runs, runs in progress, the run history. */
export async function knownJobs(client: Client, schema: string): Promise<string[]> {
  const s = ident(schema);
  const { rows: present } = await client.query<{ history: boolean }>("SELECT to_regclass($1) IS NOT NULL AS history", [`${s}.${TABLES.runHistory}`]);
  const history = present[0].history ? ` UNION SELECT job_name FROM ${s}.${TABLES.runHistory}` : "";
  const { rows } = await client.query<{ job_name: string }>(
    `SELECT job_name FROM ${s}.${TABLES.intakeJob} UNION SELECT job_name FROM ${s}.${TABLES.run}${history} ORDER BY 1`,
  );
  return rows.map((r) => r.job_name);
}
