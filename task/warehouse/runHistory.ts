/**
 * HUB_EXPORT_RUN_HISTORY: one row per run outcome or operator action. `event` is ExecutionCompleted,
 * ExecutionFailed, Stopped, Refused, or an operator's Reload, Discard or Retry (operate/); `detail` carries the counts
 * and issue-specific keys (unknownCodes, setAside, badRows, ...),
 * redacted (core/redact.ts): a reason may quote a hub's answer.
 */
import type { ClientBase, Pool } from "pg";
import { redactDeep } from "../../core/redact";
import type { RunTables } from "./tables";

export type RunHistoryEvent = "ExecutionCompleted" | "ExecutionFailed" | "Stopped" | "Refused" | "Reload" | "Discard" | "Retry";

export interface RunHistoryEntry {
  clientName: string;
  jobName: string;
  transactionId: string | null;
  event: RunHistoryEvent;
  actor?: string;
  detail: Record<string, unknown>;
}

export async function recordRunHistory(client: ClientBase | Pool, t: Pick<RunTables, "runHistory">, entry: RunHistoryEntry): Promise<void> {
  await client.query(
    `INSERT INTO ${t.runHistory} (plat_client_name, job_name, transaction_id, event, actor, detail) VALUES ($1, $2, $3, $4, $5, $6)`,
    [entry.clientName, entry.jobName, entry.transactionId, entry.event, entry.actor ?? null, JSON.stringify(redactDeep(entry.detail))],
  );
}
