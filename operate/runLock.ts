/**
 * What every operator action on a client's run data does first, in its own database transaction: take the client's
 * run lock for that transaction (refused while a run works) and refuse while a stopped run waits to be resumed (that
 * run would act on what the operator changed: advance the watermarks again, publish a queued message).
 */
import type { Client } from "pg";
import { UserError } from "../core/errors";
import { TABLES } from "../core/naming";
import { RUN_LOCK_KEYS } from "../task/warehouse/runState";
import { inTransaction } from "../task/warehouse/database";

/** A name used unquoted in SQL, checked (PostgreSQL folds it to lower case, as the stack names it). */
export const ident = (name: string): string => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UserError(`'${name}' is not a plain SQL identifier`);
  return name;
};

export interface OperatorLock {
  stagingSchema: string;
  clientName: string;
  /** The command, in messages (`reload`). */
  action: string;
  /** What the unfinished run would do to the action. */
  undone: string;
  /** Tables the action needs besides the run tables. */
  tables: string[];
}

/** The action's HUB_EXPORT_RUN_HISTORY row, with the database user that made it (`detail.databaseUser`). */
export async function recordOperatorAction(
  client: Client,
  history: string,
  row: { clientName: string; jobName: string; event: string; actor: string; detail: Record<string, unknown> },
): Promise<{ historyId: string; recordedAt: Date }> {
  const { rows } = await client.query<{ history_id: string; recorded_at: Date }>(
    `INSERT INTO ${history} (plat_client_name, job_name, event, actor, detail) VALUES ($1, $2, $3, $4, $5::jsonb || jsonb_build_object('databaseUser', current_user))
     RETURNING history_id, recorded_at`,
    [row.clientName, row.jobName, row.event, row.actor, JSON.stringify(row.detail)],
  );
  return { historyId: String(rows[0].history_id), recordedAt: rows[0].recorded_at };
}

/**
 * An operator action in one transaction: the run lock, the run tables present, no unfinished run; then `work`. Rolled
 * back if any of it throws.
 */
export function operatorTransaction<T>(client: Client, input: OperatorLock, work: () => Promise<T>): Promise<T> {
  return inTransaction(client, async () => {
    const staging = ident(input.stagingSchema);
    const run = `${staging}.${TABLES.run}`;
    const { rows: lock } = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_xact_lock(${RUN_LOCK_KEYS}) AS ok`,
      [input.clientName],
    );
    if (!lock[0].ok)
      throw new UserError([
        `a run of client ${input.clientName} is working now (${await lockHolder(client, input.clientName)}): ${input.action} refuses while it holds the run lock`,
        "try again when it has ended ('hub-export status' shows it)",
      ]);
    const needed = [run, `${staging}.${TABLES.runHistory}`, ...input.tables];
    const missing = await client.query<{ t: string }>(
      "SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL",
      [needed],
    );
    if (missing.rows.length)
      throw new UserError(
        `table ${missing.rows.map((r) => r.t).join(", ")} does not exist: apply the baseline of this version first ('pulumi up', or 'npm start' locally)`,
      );
    const { rows: unfinished } = await client.query<{ transaction_id: string; phase: string; started_at: Date }>(
      `SELECT transaction_id, phase, started_at FROM ${run} WHERE plat_client_name = $1 AND phase <> 'REPORT'`,
      [input.clientName],
    );
    if (unfinished[0]) {
      const u = unfinished[0];
      throw new UserError([
        `run ${u.transaction_id} of client ${input.clientName} is unfinished (phase ${u.phase}, since ${u.started_at.toISOString()}): the next run resumes it and then ${input.undone}`,
        `let that run finish first ('hub-export run-now --wait', or the schedule), then ${input.action}`,
      ]);
    }
    return work();
  });
}

/** Who holds the client's run lock: the session's pid, application and since when, as far as this login may see. */
async function lockHolder(client: Client, clientName: string): Promise<string> {
  const r = await client
    .query<{ pid: number; application_name: string | null; backend_start: Date | null }>(
      `SELECT a.pid, a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = (hashtext('hub-export')::bigint & 4294967295)::text::oid AND l.objid = (hashtext($1)::bigint & 4294967295)::text::oid AND l.objsubid = 2`,
      [clientName],
    )
    .then(
      ({ rows }) => rows[0],
      () => undefined,
    );
  if (!r) return "its session holds the run lock";
  return `session pid ${r.pid}${r.application_name ? `, ${r.application_name}` : ""}${r.backend_start ? `, connected since ${r.backend_start.toISOString()}` : ""}`;
}
