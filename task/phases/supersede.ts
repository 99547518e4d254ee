/**
 * A FAILED or SET_ASIDE message of an earlier transaction whose every employee is in a newer message of the same hub
 * tenant is SUPERSEDED (never sent again: it carries an older state of them). Set-based after each chunk commits,
 * against _STATUS.employee_ids; nothing runs when the run starts with no message failed or set aside.
 */
import type { PoolClient } from "pg";
import type { RunContext } from "../context";
import type { RunTables } from "../warehouse/tables";
import { MESSAGE_STATUS } from "../warehouse/messageStatus";

const OPEN = `('${MESSAGE_STATUS.failed}', '${MESSAGE_STATUS.setAside}')`;

/** Whether a message of an earlier transaction could be superseded by this run's extract. */
export async function anySupersedable(ctx: RunContext): Promise<boolean> {
  const { rows } = await ctx.config.pool.query<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${ctx.config.tables.status} WHERE status IN ${OPEN} AND employee_ids IS NOT NULL) AS any`,
  );
  return rows[0].any;
}

/** $1: the run's transaction; $2: ids of the newer messages (a chunk's). Returns the messages superseded. */
export function supersedeSql(t: Pick<RunTables, "status" | "archive">): string {
  return `WITH fresh AS (
    SELECT a.message_id AS by_id, a.hub_tenant_id, e FROM ${t.archive} a CROSS JOIN LATERAL unnest(a.employee_ids) AS e WHERE a.message_id = ANY($2::uuid[])
  ),
  hits AS (
    SELECT s.message_id, array_agg(DISTINCT f.e) AS carried, (array_agg(f.by_id ORDER BY f.by_id DESC))[1] AS by_id
      FROM ${t.status} s
      JOIN ${t.archive} o ON o.message_id = s.message_id AND o.transaction_id <> $1::uuid
      JOIN fresh f ON f.hub_tenant_id = s.hub_tenant_id AND f.e = ANY(s.employee_ids)
     WHERE s.status IN ${OPEN} AND s.employee_ids && (SELECT coalesce(array_agg(e), '{}') FROM fresh)
     GROUP BY s.message_id
  )
  UPDATE ${t.status} s
     SET employee_ids = ARRAY(SELECT x FROM unnest(s.employee_ids) AS x WHERE x <> ALL (h.carried)),
         superseded_by = h.by_id,
         status = CASE WHEN s.employee_ids <@ h.carried THEN '${MESSAGE_STATUS.superseded}' ELSE s.status END,
         reason = CASE WHEN s.employee_ids <@ h.carried
                       THEN format('superseded by message %s of transaction %s, which carries a newer state of its employees (it was %s: %s)', h.by_id, $1::text, s.status, s.reason)
                       ELSE s.reason END,
         updated_at = now()
    FROM hits h
   WHERE s.message_id = h.message_id AND s.status IN ${OPEN}
  RETURNING s.message_id, s.status, h.by_id`;
}

/** Supersedes what the newer messages `messageIds` (committed) carry; returns the ids of the messages superseded. */
export async function supersede(
  ctx: RunContext,
  client: PoolClient,
  sql: string,
  messageIds: string[],
): Promise<string[]> {
  const { rows } = await client.query<{ message_id: string; status: string; by_id: string }>(sql, [
    ctx.run.transactionId,
    messageIds,
  ]);
  const superseded = rows.filter((r) => r.status === MESSAGE_STATUS.superseded);
  for (const r of superseded)
    ctx.log.info(
      { event: "extract.superseded", messageId: r.message_id, by: r.by_id },
      "an older failed or set-aside message is superseded by a newer one of its employees",
    );
  return superseded.map((r) => r.message_id);
}
