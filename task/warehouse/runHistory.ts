/**
 * HUB_EXPORT_RUN_HISTORY: one row per run outcome (ExecutionCompleted, ExecutionFailed, Stopped, Refused) or operator
 * action (Reload, Discard, Retry); `detail` carries the counts and issue-specific keys, redacted (core/redact.ts): a
 * reason may quote a hub's answer.
 */
import type { ClientBase, Pool } from "pg";
import { redactDeep } from "../../core/redact";
import type { RunTables } from "./tables";

export type RunHistoryEvent =
  "ExecutionCompleted" | "ExecutionFailed" | "Stopped" | "Refused" | "Reload" | "Discard" | "Retry";

export interface RunHistoryEntry {
  clientName: string;
  jobName: string;
  transactionId: string | null;
  event: RunHistoryEvent;
  actor?: string;
  detail: Record<string, unknown>;
}

export async function recordRunHistory(
  client: ClientBase | Pool,
  t: Pick<RunTables, "runHistory">,
  entry: RunHistoryEntry,
): Promise<void> {
  await client.query(
    `INSERT INTO ${t.runHistory} (plat_client_name, job_name, transaction_id, event, actor, detail) VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      entry.clientName,
      entry.jobName,
      entry.transactionId,
      entry.event,
      entry.actor ?? null,
      JSON.stringify(redactDeep(entry.detail)),
    ],
  );
}

/**
 * The links the job's last run left open (`detail.openLinks` of its last outcome row, task/http/breaker.ts): the next
 * run sends each of them one probe request first.
 */
export async function lastOpenLinks(
  client: ClientBase,
  t: Pick<RunTables, "runHistory">,
  jobName: string,
): Promise<string[]> {
  const { rows } = await client.query<{ links: Record<string, unknown> | null }>(
    `SELECT detail->'openLinks' AS links FROM ${t.runHistory}
      WHERE job_name = $1 AND event IN ('ExecutionCompleted', 'ExecutionFailed', 'Stopped') ORDER BY recorded_at DESC, history_id DESC LIMIT 1`,
    [jobName],
  );
  const links = rows[0]?.links;
  return links && typeof links === "object" && !Array.isArray(links) ? Object.keys(links) : [];
}
