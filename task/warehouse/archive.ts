/**
 * Moving messages from HUB_<CLIENT>_MESSAGES to _ARCHIVE, counted per tenant in HUB_EXPORT_RUN_TENANT: the status
 * writer moves each message once it is published and sent to ERS, the finish the few left (DESIGN.md section 6).
 */
import type { RunTables } from "./tables";

const ARCHIVE_COLUMNS = "message_id, transaction_id, seq, hub_tenant_id, hub_destination, country_code, record_count, employee_ids, changed_through, body, created_at";

/**
 * One statement: `deleted` (a DELETE from the messages table, aliased m, RETURNING m.*) goes into _ARCHIVE, archived
 * by the run $1, and is added to the run's counts.
 */
export function archiveSql(t: RunTables, deleted: string): string {
  return `WITH moved AS (${deleted}),
     ins AS (
       INSERT INTO ${t.archive} (${ARCHIVE_COLUMNS}, archived_by) SELECT ${ARCHIVE_COLUMNS}, $1::uuid FROM moved
       RETURNING transaction_id, hub_tenant_id, record_count
     )
     INSERT INTO ${t.runTenant} AS c (transaction_id, hub_tenant_id, messages, retried, entities)
     SELECT $1::uuid, hub_tenant_id, count(*), count(*) FILTER (WHERE transaction_id <> $1::uuid), sum(record_count) FROM ins GROUP BY hub_tenant_id ORDER BY hub_tenant_id
     ON CONFLICT (transaction_id, hub_tenant_id)
     DO UPDATE SET messages = c.messages + EXCLUDED.messages, retried = c.retried + EXCLUDED.retried, entities = c.entities + EXCLUDED.entities`;
}

/** Archives the messages `$2` (ids) for the run `$1`. */
export function archiveByIdSql(t: RunTables): string {
  return archiveSql(t, `DELETE FROM ${t.messages} m WHERE m.message_id = ANY($2::uuid[]) RETURNING m.*`);
}
