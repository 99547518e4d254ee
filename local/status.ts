/** What a run did, read back from the staging schema: HUB_INTAKE_JOB rows and per-status counts of _STATUS. */
import type { Client } from "pg";
import { TABLES, clientTables } from "../core/naming";

export interface IntakeJobRow {
  transactionId: string;
  jobName: string;
  clientName: string;
  status: string;
  startedAt: Date;
  finishedAt: Date;
  counts: { extracted: number; messages: number; published: number; failed: number; ersEntities: number };
  error: string | null;
  /** Per publish status, from HUB_<CLIENT>_MESSAGES_STATUS. */
  statusCounts: Record<string, number>;
}

export interface FailedMessage {
  messageId: string;
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

export async function latestIntakeJobs(client: Client, schema: string, jobName: string, limit = 10): Promise<IntakeJobRow[]> {
  const s = ident(schema);
  const { rows } = await client.query(
    `SELECT transaction_id, job_name, plat_client_name, status, started_at, finished_at, extracted_count, message_count,
            published_count, failed_count, ers_entity_count, error
       FROM ${s}.${TABLES.intakeJob} WHERE job_name = $1 ORDER BY finished_at DESC LIMIT $2`,
    [jobName, limit],
  );
  const jobs: IntakeJobRow[] = rows.map((r) => ({
    transactionId: r.transaction_id,
    jobName: r.job_name,
    clientName: r.plat_client_name,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    counts: { extracted: r.extracted_count, messages: r.message_count, published: r.published_count, failed: r.failed_count, ersEntities: r.ers_entity_count },
    error: r.error,
    statusCounts: {},
  }));
  // One grouped query per client's STATUS table for all listed transactions.
  for (const clientName of new Set(jobs.map((j) => j.clientName))) {
    const ids = jobs.filter((j) => j.clientName === clientName).map((j) => j.transactionId);
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
    `SELECT message_id, hub_tenant_id, hub_destination, attempts, reason FROM ${ident(schema)}.${ident(clientTables(clientName).status)}
      WHERE transaction_id = $1 AND status = 'FAILED' ORDER BY message_id LIMIT $2`,
    [transactionId, limit],
  );
  return rows.map((r) => ({ messageId: r.message_id, hubTenantId: r.hub_tenant_id, hubDestination: r.hub_destination, attempts: r.attempts, reason: r.reason }));
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
