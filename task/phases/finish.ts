/**
 * Step 6 of a run, in one database transaction: queued messages leave _MESSAGES (published ones done, failed ones for
 * the next run), the run history gets its row, the watermarks advance to the upper bound. A completed run's
 * HUB_INTAKE_JOB row waits for the HRSYS report (recordIntakeJob: step 10 finds completed runs only).
 */
import type { Pool, PoolClient } from "pg";
import type { RunContext } from "../context";
import { inTransaction } from "../warehouse/database";
import type { FinalCounts, IntakeJobStatus, RunState } from "../warehouse/runState";
import type { RunTables } from "../warehouse/tables";
import { archiveSql, archiveUnpublishedSql } from "../warehouse/archive";
import { recordRunHistory } from "../warehouse/runHistory";
import { insertIntakeJob } from "../warehouse/intakeJob";
import { MESSAGE_STATUS } from "../warehouse/messageStatus";
import { heldBackBy, logBadRows, type BadRowsReport } from "./badRows";

/** The actor of the history rows a run writes itself. */
export const HISTORY_ACTOR = "export-task";

export interface FinishResult {
  status: IntakeJobStatus;
  counts: FinalCounts;
}

/**
 * `detail` adds issue-specific keys to the run's history row (e.g. unknownCodes); `badRows` are the bad warehouse rows
 * found before the extract, to which the rows the extract held back are added (detail.badRows, one warning each).
 */
export async function finish(
  ctx: RunContext,
  client: PoolClient,
  detail: Record<string, unknown> = {},
  badRows: BadRowsReport = {},
): Promise<FinishResult> {
  const { tables: t, definition } = ctx.config;
  const tx = ctx.run.transactionId;
  return inTransaction(client, async () => {
    // Driven by what is left in the queue, each status looked up by its key: never a scan of _STATUS, which keeps
    // every message of every run.
    await client.query(
      archiveSql(
        t,
        `DELETE FROM ${t.messages} m WHERE m.message_id IN (
           SELECT q.message_id FROM ${t.messages} q CROSS JOIN LATERAL (SELECT 1 FROM ${t.status} s WHERE s.message_id = q.message_id AND s.status = 'PUBLISHED' LIMIT 1) p
         ) RETURNING m.*`,
      ),
      [tx],
    );
    const moved = await client.query<{ hub_tenant_id: string; messages: number; retried: number; entities: number }>(
      `SELECT hub_tenant_id, messages, retried, entities FROM ${t.runTenant} WHERE transaction_id = $1`,
      [tx],
    );
    // Why the failed ones failed, read while they are still queued (each status looked up by its key).
    const causes = await failureCauses(t, client);
    // Messages left unpublished, archived too: failed ones, and those held back by the strict CLS check, set aside or
    // superseded (none of them a failure).
    const left = await client.query<{
      hub_tenant_id: string;
      n: number;
      held: number;
      aside: number;
      superseded: number;
    }>(archiveUnpublishedSql(t), [tx]);
    const parts = await countsSoFar(client, t, { transactionId: tx });
    const tenants: FinalCounts["tenants"] = {};
    for (const x of ctx.config.tenants) tenants[x.hubTenantId] = { published: 0, failed: 0, entities: 0 };
    for (const r of moved.rows)
      tenants[r.hub_tenant_id] = {
        ...(tenants[r.hub_tenant_id] ?? { failed: 0 }),
        published: r.messages,
        entities: r.entities,
      };
    for (const r of left.rows)
      tenants[r.hub_tenant_id] = { ...(tenants[r.hub_tenant_id] ?? { published: 0, entities: 0 }), failed: r.n };
    const sum = (f: (r: (typeof moved.rows)[number]) => number) => moved.rows.reduce((n, r) => n + f(r), 0);
    const counts: FinalCounts = {
      extracted: parts.extracted,
      messages: parts.messages,
      published: sum((r) => r.messages),
      failed: left.rows.reduce((n, r) => n + r.n, 0),
      heldBack: left.rows.reduce((n, r) => n + r.held, 0),
      setAside: left.rows.reduce((n, r) => n + r.aside, 0),
      superseded: left.rows.reduce((n, r) => n + r.superseded, 0),
      retried: sum((r) => r.retried),
      ersEntities: sum((r) => r.entities),
      tenants,
    };
    const status: IntakeJobStatus = counts.failed > 0 ? "ExecutionFailed" : "ExecutionCompleted";
    const error = counts.failed > 0 ? failureReason(counts.failed, causes, ctx.config.tenants) : null;
    const p = definition.parameters;
    // Every outcome goes to the run history; HUB_INTAKE_JOB gets its row once the run is complete (recordIntakeJob).
    const { tenants: _perTenant, ...totals } = counts;
    const setAside = counts.setAside ? await setAsideBy(ctx, client) : [];
    const bad = { ...(await heldBackBy(ctx, client)), ...badRows };
    logBadRows(ctx, bad);
    for (const m of setAside)
      ctx.log.warn(
        { event: "publish.setAside", ...m },
        "message set aside: no run retries it until 'hub-export retry' (or a newer extract of its employees supersedes it)",
      );
    await recordRunHistory(client, t, {
      clientName: p.client_name,
      jobName: p.job_name,
      transactionId: tx,
      event: status,
      actor: HISTORY_ACTOR,
      detail: {
        buildNumber: definition.buildNumber,
        startedAt: ctx.run.startedAt,
        attempts: ctx.run.attempts,
        upperBound: ctx.run.upperBound,
        ...totals,
        ...(error ? { error } : {}),
        ...(setAside.length ? { setAsideMessages: setAside } : {}),
        ...(Object.keys(bad).length ? { badRows: bad } : {}),
        ...detail,
      },
    });
    await client.query(
      `INSERT INTO ${t.watermark} AS w (plat_client_name, hub_tenant_id, country_code, changed_through, transaction_id)
       SELECT $1, p->>0, p->>1, $3::timestamp, $2
         FROM (SELECT DISTINCT jsonb_array_elements(pairs) AS p FROM ${t.runPart} WHERE transaction_id = $2) x
       ON CONFLICT (plat_client_name, hub_tenant_id, country_code)
       DO UPDATE SET changed_through = greatest(w.changed_through, EXCLUDED.changed_through), transaction_id = EXCLUDED.transaction_id, updated_at = now()`,
      [definition.parameters.client_name, tx, ctx.run.upperBound],
    );
    await client.query(`DELETE FROM ${t.runPart} WHERE transaction_id = $1`, [tx]);
    await client.query(`DELETE FROM ${t.runTenant} WHERE transaction_id = $1`, [tx]);
    await client.query(
      `UPDATE ${t.run} SET phase = 'REPORT', final_status = $2, final_counts = $3, updated_at = now() WHERE transaction_id = $1`,
      [tx, status, JSON.stringify(counts)],
    );
    ctx.run.phase = "REPORT";
    ctx.run.finalStatus = status;
    ctx.run.finalCounts = counts;
    return { status, counts };
  });
}

/** What a run that stops had done so far, for its Stopped history row: the employees and messages its extract
 * committed, and what it published and sent to ERS (final once finish has run). */
export type CountsSoFar = Pick<FinalCounts, "extracted" | "messages" | "published" | "ersEntities">;

export async function countsSoFar(
  client: Pool | PoolClient,
  t: Pick<RunTables, "runPart" | "runTenant">,
  run: Pick<RunState, "transactionId"> & Partial<Pick<RunState, "finalCounts">>,
): Promise<CountsSoFar> {
  if (run.finalCounts) {
    const { extracted, messages, published, ersEntities } = run.finalCounts;
    return { extracted, messages, published, ersEntities };
  }
  const { rows } = await client.query<CountsSoFar>(
    `SELECT (SELECT coalesce(sum(employees), 0)::int FROM ${t.runPart} WHERE transaction_id = $1) AS extracted,
            (SELECT coalesce(sum(messages), 0)::int FROM ${t.runPart} WHERE transaction_id = $1) AS messages,
            (SELECT coalesce(sum(messages), 0)::int FROM ${t.runTenant} WHERE transaction_id = $1) AS published,
            (SELECT coalesce(sum(entities), 0)::int FROM ${t.runTenant} WHERE transaction_id = $1) AS "ersEntities"`,
    [run.transactionId],
  );
  return rows[0];
}

/**
 * HUB_INTAKE_JOB's row of a run that reached ExecutionCompleted, written with the run's close (task/run.ts), after
 * every step that can still fail: a run whose final HRSYS report stops it has no such row until the next run has
 * reported it.
 */
export async function recordIntakeJob(
  client: PoolClient,
  ctx: Pick<RunContext, "config" | "run">,
  status: IntakeJobStatus,
  counts: FinalCounts,
): Promise<void> {
  const { tables: t, definition } = ctx.config;
  const tx = ctx.run.transactionId;
  const p = definition.parameters;
  if (status !== "ExecutionCompleted") return;
  // The specification's columns, and the known ones the shared table has (warehouse/intakeJob.ts).
  const { tenants: _perTenant, ...totals } = counts;
  await insertIntakeJob(client, t.intakeJob, {
    jobName: p.job_name,
    transactionId: tx,
    clientName: p.client_name,
    buildNumber: definition.buildNumber,
    startedAt: ctx.run.startedAt,
    counts: totals,
  });
}

/** The most common reasons of a run's failed messages, with their counts and queues (the reason of its history row). */
const CAUSES_LISTED = 3;
type Cause = { hub_destination: string | null; reason: string; n: number };

/** The failed messages still queued (published ones have left), grouped by queue and reason, most common first. */
async function failureCauses(t: RunTables, client: PoolClient): Promise<Cause[]> {
  const S = MESSAGE_STATUS;
  const { rows } = await client.query<Cause>(
    `SELECT coalesce(s.hub_destination, m.hub_destination) AS hub_destination, coalesce(s.reason, 'no publish outcome recorded') AS reason, count(*)::int AS n
       FROM ${t.messages} m LEFT JOIN ${t.status} s ON s.message_id = m.message_id
      WHERE s.status IS NULL OR s.status NOT IN ('${S.heldBack}', '${S.setAside}', '${S.superseded}', '${S.published}')
      GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT ${CAUSES_LISTED + 1}`,
  );
  return rows;
}

/**
 * `41 message(s) failed: 28 to queue US (HUB_MQ_US_QA): HTTP 400: …; 13 to queue EU (…): …; the next run retries
 * them`: the cause, in the words of the queue's answers, where an operator looks first (status, the summary, alerts).
 */
export function failureReason(
  failed: number,
  causes: Cause[],
  tenants: { hubDestination: string; region: string }[],
): string {
  const queue = (destination: string | null) => {
    const region = tenants.find((x) => x.hubDestination === destination)?.region;
    return destination ? (region ? `queue ${region} (${destination})` : `queue ${destination}`) : "no queue";
  };
  const shown = causes.slice(0, CAUSES_LISTED);
  const listed = shown.reduce((n, c) => n + c.n, 0);
  const parts = shown.map(
    (c) => `${c.n} to ${queue(c.hub_destination)}: ${c.reason.length > 200 ? `${c.reason.slice(0, 200)}…` : c.reason}`,
  );
  if (failed > listed) parts.push(`${failed - listed} with other reasons`);
  return `${failed} message(s) failed: ${parts.join("; ")}; the next run retries them`;
}

/** The messages this run set aside (their _STATUS rows name it), with their reasons: the first SET_ASIDE_LISTED. */
const SET_ASIDE_LISTED = 20;
type SetAside = { messageId: string; hubTenantId: string; employeeIds: string[]; reason: string };
async function setAsideBy(ctx: RunContext, client: PoolClient): Promise<SetAside[]> {
  const t = ctx.config.tables;
  const { rows } = await client.query<SetAside>(
    `SELECT s.message_id AS "messageId", s.hub_tenant_id AS "hubTenantId", a.employee_ids AS "employeeIds", s.reason
       FROM ${t.status} s JOIN ${t.archive} a ON a.message_id = s.message_id
      WHERE s.transaction_id = $1 AND s.status = '${MESSAGE_STATUS.setAside}' ORDER BY s.message_id LIMIT ${SET_ASIDE_LISTED}`,
    [ctx.run.transactionId],
  );
  return rows;
}
