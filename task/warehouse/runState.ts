/**
 * HUB_EXPORT_RUN: the run of a client that has started and not finished. A run opens a new transaction id, or
 * resumes the one found here; only one run per client works at a time (a session-level advisory lock, released by
 * PostgreSQL when the task dies).
 */
import crypto from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { PoolClient } from "pg";
import { UserError } from "../../core/errors";
import type { PipelineDefinition } from "../../core/definition";
import type { RunTables } from "./tables";

export type RunPhase = "EXTRACT" | "PUBLISH" | "ERS" | "REPORT";
export type IntakeJobStatus = "ExecutionCompleted" | "ExecutionFailed";

export interface FinalCounts {
  extracted: number;
  messages: number;
  published: number;
  failed: number;
  /** Held back by the strict CLS check (status HELD_BACK): not failed, retried once the load sheet has their codes. */
  heldBack: number;
  /** Set aside by this run (status SET_ASIDE: refused for good by set_aside_after_runs runs): a warning, not a failure. */
  setAside: number;
  /** Left unpublished because newer messages carry their employees (status SUPERSEDED). */
  superseded: number;
  retried: number;
  ersEntities: number;
  /** Per tenant id: what the HRSYS API is told. */
  tenants: Record<string, { published: number; failed: number; entities: number }>;
}

export interface RunState {
  transactionId: string;
  phase: RunPhase;
  attempts: number;
  startedReported: boolean;
  /** ISO local date-time: changes up to here belong to this run (openRun says how it is chosen). */
  upperBound: string;
  /** A new run's: the transaction that held its upper bound back, if one did (openRun). */
  heldBy?: UpperBoundHold;
  finalStatus: IntakeJobStatus | null;
  finalCounts: FinalCounts | null;
  startedAt: Date;
  resumed: boolean;
}

/**
 * The client's run lock: a PostgreSQL advisory lock on these two keys ($1 = plat_client_name). Runs hold it for their
 * session; `hub-export reload` takes it for its transaction, so neither works while the other does.
 */
export const RUN_LOCK_KEYS = "hashtext('hub-export'), hashtext($1)";

/** Another session holds the client's run lock: the run is refused before it touches anything. */
export class RunLockHeld extends UserError {}

/** Waits up to `waitMs` for the client's run lock: a killed run's session may take a moment to go away. */
export async function lockClient(client: PoolClient, clientName: string, waitMs = 30_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${RUN_LOCK_KEYS}) AS ok`, [
      clientName,
    ]);
    if (rows[0].ok) return;
    if (Date.now() > deadline)
      throw new RunLockHeld(
        `another run of client ${clientName} is in progress (its database session holds the run lock)`,
      );
    await sleep(250);
  }
}

export async function unlockClient(client: PoolClient, clientName: string): Promise<void> {
  await client.query(`SELECT pg_advisory_unlock(${RUN_LOCK_KEYS})`, [clientName]);
}

const LOCAL = (e: string) => `to_char(${e}, 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** A row of HUB_EXPORT_RUN as the run's state (but `resumed`). */
type RunRow = Omit<RunState, "heldBy" | "resumed">;
const COLUMNS = `transaction_id AS "transactionId", phase, attempts, started_reported AS "startedReported", ${LOCAL("upper_bound")} AS "upperBound", final_status AS "finalStatus", final_counts AS "finalCounts", started_at AS "startedAt"`;

/** The open transaction a new run's upper bound stays below (HUB_<CLIENT>_OLDEST_XACT()). */
export interface UpperBoundHold {
  /** Its start (ISO local date-time) and how long before the run (minus the lag) that was. */
  since: string;
  seconds: number;
  pid: number;
  applicationName: string | null;
  user: string | null;
}

export interface OpenedRun extends RunState {
  /** Sessions of the warehouse the function's owner cannot see (their transactions cannot hold the bound back). */
  hiddenSessions: number;
  /** false: the run tables lack HUB_<CLIENT>_OLDEST_XACT() (an earlier build): the bound rests on the lag alone. */
  horizonKnown: boolean;
}

/**
 * The unfinished run of the client, resumed; or a new one with a new transaction id and its upper bound (task/README.md,
 * "Change capture"): the database time less the parameter change_lag_seconds, and below the start of the oldest
 * transaction open in the warehouse, so that no change a transaction commits after this run read its rows can be at
 * or below the watermark the run leaves.
 */
export async function openRun(client: PoolClient, t: RunTables, def: PipelineDefinition): Promise<OpenedRun> {
  const name = def.parameters.client_name;
  const found = await client.query<RunRow>(
    `UPDATE ${t.run} SET attempts = attempts + 1, updated_at = now() WHERE plat_client_name = $1 RETURNING ${COLUMNS}`,
    [name],
  );
  if (found.rows[0]) return { ...found.rows[0], resumed: true, hiddenSessions: 0, horizonKnown: true };
  const create = (oldest: string) =>
    client.query<
      RunRow & {
        since: string | null;
        held_seconds: number | null;
        pid: number | null;
        application_name: string | null;
        usename: string | null;
        hidden_sessions: number | null;
      }
    >(
      `WITH o AS (${oldest}),
       b AS (SELECT localtimestamp - make_interval(secs => $5::int) AS lagged, o.xact_start::timestamp AS since FROM o),
       ins AS (
         INSERT INTO ${t.run} (transaction_id, job_name, plat_client_name, phase, build_number, upper_bound)
         SELECT $1, $2, $3, 'EXTRACT', $4, least(b.lagged, b.since - interval '1 microsecond') FROM b
         RETURNING ${COLUMNS}
       )
       SELECT ins.*, ${LOCAL("b.since")} AS since, extract(epoch FROM b.lagged - b.since)::float8 AS held_seconds, o.pid, o.application_name, o.usename, o.hidden_sessions
         FROM ins, b, o`,
      [crypto.randomUUID(), def.parameters.job_name, name, def.buildNumber, def.parameters.change_lag_seconds],
    );
  let horizonKnown = true;
  const created = await create(`SELECT * FROM ${t.oldestXact}()`).catch((err: { code?: string }) => {
    // 42883: the run tables of an earlier build have no such function.
    if (err.code !== "42883") throw err;
    horizonKnown = false;
    return create(
      "SELECT NULL::timestamptz AS xact_start, NULL::int AS pid, NULL::text AS application_name, NULL::text AS usename, 0 AS hidden_sessions",
    );
  });
  const { since, held_seconds, pid, application_name, usename, hidden_sessions, ...row } = created.rows[0];
  const heldBy =
    since !== null && held_seconds !== null && held_seconds > 0
      ? { since, seconds: Math.round(held_seconds), pid: pid!, applicationName: application_name, user: usename }
      : undefined;
  return { ...row, resumed: false, heldBy, hiddenSessions: hidden_sessions ?? 0, horizonKnown };
}

export async function setPhase(client: PoolClient, t: RunTables, run: RunState, phase: RunPhase): Promise<void> {
  await client.query(`UPDATE ${t.run} SET phase = $2, updated_at = now() WHERE transaction_id = $1`, [
    run.transactionId,
    phase,
  ]);
  run.phase = phase;
}

export async function markStartedReported(client: PoolClient, t: RunTables, run: RunState): Promise<void> {
  await client.query(`UPDATE ${t.run} SET started_reported = true, updated_at = now() WHERE transaction_id = $1`, [
    run.transactionId,
  ]);
  run.startedReported = true;
}

/** The run is over: the intake job is in the database and the HRSYS API has been told. */
export async function closeRun(client: PoolClient, t: RunTables, run: RunState): Promise<void> {
  await client.query(`DELETE FROM ${t.run} WHERE transaction_id = $1`, [run.transactionId]);
}
