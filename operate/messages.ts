/**
 * An operator's decision on one message that runs no longer retry (task/README.md, "Poison messages"): discard or
 * retry (refused for good again, a retried message is set aside at once: its refusals stay one short of
 * set_aside_after_runs). In one database transaction holding the client's run lock (operate/runLock.ts); who, when
 * and why go to HUB_EXPORT_RUN_HISTORY (event Discard or Retry). Employee ids come from the warehouse and reasons
 * quote hub answers: the history's detail and what the operator reads pass core/redact.ts, as the task's output does.
 */
import type { Client } from "pg";
import { UserError } from "../core/errors";
import { TABLES, clientTables } from "../core/naming";
import { MESSAGE_STATUS, type MessageStatus } from "../task/warehouse/messageStatus";
import { ident, operatorTransaction, recordOperatorAction } from "./runLock";
import type { RunHistoryEvent } from "../task/warehouse/runHistory";
import { redact, redactDeep } from "../core/redact";

export type MessageAction = Extract<RunHistoryEvent, "Discard" | "Retry">;

export interface MessageActionInput {
  stagingSchema: string;
  clientName: string;
  jobName: string;
  messageId: string;
  actor: string;
  reason?: string;
  /** The parameter set_aside_after_runs of the stack: a retried message is one refusal short of it. */
  setAsideAfterRuns: number;
}

export interface MessageActionResult {
  historyId: string;
  recordedAt: Date;
  actor: string;
  action: MessageAction;
  messageId: string;
  previousStatus: string;
  previousReason: string | null;
  status: MessageStatus;
  hubTenantId: string;
  hubDestination: string;
  employeeIds: string[];
  /** The transaction that extracted it. */
  extractedBy: string;
  jobName: string;
}

/** From which statuses each action goes, and to which. */
const ACTIONS: Record<MessageAction, { from: MessageStatus[]; to: MessageStatus; verb: string }> = {
  Discard: { from: [MESSAGE_STATUS.setAside, MESSAGE_STATUS.failed], to: MESSAGE_STATUS.discarded, verb: "discard" },
  Retry: { from: [MESSAGE_STATUS.setAside], to: MESSAGE_STATUS.failed, verb: "retry" },
};

/** Why a message in another status cannot take the action. */
function refusal(action: MessageAction, id: string, status: string | null): string {
  const verb = ACTIONS[action].verb;
  switch (status) {
    case MESSAGE_STATUS.published:
      return `message ${id} was published: there is nothing to ${verb}`;
    case MESSAGE_STATUS.superseded:
      return `message ${id} is superseded by a newer message of its employees: no run sends it again, and sending it would carry an older state of them`;
    case MESSAGE_STATUS.discarded:
      return action === "Discard"
        ? `message ${id} is discarded already`
        : `message ${id} is discarded: no run sends it again (its employees' next change does)`;
    case MESSAGE_STATUS.heldBack:
      return `message ${id} is held back by the strict CLS check: it is published once the CLS load sheet has its codes (cls/README.md)`;
    case MESSAGE_STATUS.failed:
      return `message ${id} is FAILED: the next run retries it anyway (only a set-aside message needs 'hub-export retry')`;
    default:
      return `message ${id} has status ${status ?? "none (not attempted yet)"}: only ${ACTIONS[action].from.join(" or ")} messages can be ${verb === "retry" ? "retried" : "discarded"}`;
  }
}

export async function changeMessage(
  client: Client,
  action: MessageAction,
  input: MessageActionInput,
): Promise<MessageActionResult> {
  const staging = ident(input.stagingSchema);
  const names = clientTables(input.clientName);
  const t = {
    status: `${staging}.${ident(names.status)}`,
    archive: `${staging}.${ident(names.archive)}`,
    history: `${staging}.${TABLES.runHistory}`,
  };
  const { from, to, verb } = ACTIONS[action];
  const lock = {
    stagingSchema: staging,
    clientName: input.clientName,
    action: verb,
    undone: "publishes or archives its queued messages as it finds them",
    tables: [t.status, t.archive],
  };
  return operatorTransaction(client, lock, async () => {
    const { rows: found } = await client.query<{
      status: string | null;
      reason: string | null;
      hub_tenant_id: string;
      hub_destination: string;
      employee_ids: string[];
      transaction_id: string;
    }>(
      `SELECT s.status, s.reason, a.hub_tenant_id, a.hub_destination, a.employee_ids, a.transaction_id
         FROM ${t.archive} a LEFT JOIN ${t.status} s ON s.message_id = a.message_id WHERE a.message_id = $1 FOR UPDATE OF a`,
      [input.messageId],
    );
    const m = found[0];
    if (!m)
      throw new UserError(
        `no message ${input.messageId} in ${t.archive} (client ${input.clientName}): 'hub-export status --job-name ${input.jobName}' lists the set-aside ones`,
      );
    if (!m.status || !(from as string[]).includes(m.status))
      throw new UserError(refusal(action, input.messageId, m.status));
    const why = `${verb} by ${input.actor}${input.reason ? `: ${input.reason}` : ""}`;
    await client.query(
      action === "Retry"
        ? `UPDATE ${t.status} SET status = $2, reason = $3, refusals = $4, employee_ids = $5, updated_at = now() WHERE message_id = $1`
        : `UPDATE ${t.status} SET status = $2, reason = $3, updated_at = now() WHERE message_id = $1`,
      action === "Retry"
        ? [input.messageId, to, why, Math.max(input.setAsideAfterRuns - 1, 0), m.employee_ids]
        : [input.messageId, to, why],
    );
    const changed = {
      messageId: input.messageId,
      previousStatus: m.status,
      previousReason: m.reason,
      status: to,
      hubTenantId: m.hub_tenant_id,
      hubDestination: m.hub_destination,
      employeeIds: m.employee_ids,
      extractedBy: m.transaction_id,
    };
    // The history's detail: the change without the destination, with the operator's reason.
    const { hubDestination: _destination, ...detail } = changed;
    const recorded = await recordOperatorAction(client, t.history, {
      clientName: input.clientName,
      jobName: input.jobName,
      event: action,
      actor: input.actor,
      detail: redactDeep({ ...detail, reason: input.reason ?? null }),
    });
    return { ...recorded, actor: input.actor, action, ...changed, jobName: input.jobName };
  });
}

/** What the operator reads: what was done, and what the next run does. */
export function formatMessageAction(r: MessageActionResult, startNow: string): string {
  const employees =
    r.employeeIds.length > 5
      ? `${r.employeeIds.slice(0, 5).join(", ")} and ${r.employeeIds.length - 5} more`
      : r.employeeIds.join(", ");
  const lines = [
    `${r.action} recorded in HUB_EXPORT_RUN_HISTORY (id ${r.historyId}) at ${r.recordedAt.toISOString()} by ${r.actor}:`,
    `  message ${r.messageId} (tenant ${r.hubTenantId}, ${r.hubDestination}; employee${r.employeeIds.length === 1 ? "" : "s"} ${employees}): ${r.previousStatus} -> ${r.status}`,
    r.previousReason ? `  it was ${r.previousStatus}: ${r.previousReason}` : "",
    "",
    r.action === "Retry"
      ? `The next run of ${r.jobName} publishes it again under its messageId; refused for good again, it is set aside again at once. Start one now: ${startNow}`
      : `No run of ${r.jobName} sends it again. Its employees reach the hub with their next change (or 'hub-export reload').`,
  ];
  return (
    lines
      .filter((l, i) => l !== "" || i === 3)
      .map(redact)
      .join("\n") + "\n"
  );
}
