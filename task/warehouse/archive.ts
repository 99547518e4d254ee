/**
 * Moving messages from HUB_<CLIENT>_MESSAGES to _ARCHIVE, counted per tenant in HUB_EXPORT_RUN_TENANT: the status
 * writer moves each message once it is published and sent to ERS, the finish all that is left, failed ones included,
 * so that at the end of every run all its messages are in _ARCHIVE and _STATUS says whether each was published.
 *
 * A failed message is retried by the next run under its own messageId: the run starts by copying the FAILED messages
 * of _ARCHIVE back into _MESSAGES (its work queue), and archiving one again updates its one _ARCHIVE row (keyed by
 * message_id) instead of adding a second.
 */
import type { RunTables } from "./tables";
import { HELD_BACK } from "../cls/codeCheck";

const ARCHIVE_COLUMNS = "message_id, transaction_id, seq, hub_tenant_id, hub_destination, country_code, record_count, employee_ids, changed_through, body, created_at";

/** A retried message is in _ARCHIVE already (archived failed): its row records the run that archived it last. */
const ON_ARCHIVED_AGAIN = "ON CONFLICT (message_id) DO UPDATE SET archived_by = EXCLUDED.archived_by, archived_at = now()";

/**
 * One statement: `deleted` (a DELETE from the messages table, aliased m, RETURNING m.*) goes into _ARCHIVE, archived
 * by the run $1, and is added to the run's counts.
 */
export function archiveSql(t: RunTables, deleted: string): string {
  return `WITH moved AS (${deleted}),
     ins AS (
       INSERT INTO ${t.archive} (${ARCHIVE_COLUMNS}, archived_by) SELECT ${ARCHIVE_COLUMNS}, $1::uuid FROM moved
       ${ON_ARCHIVED_AGAIN}
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

/**
 * The end of a run: every message still in _MESSAGES (not published: FAILED, or HELD_BACK by the strict CLS check)
 * moves to _ARCHIVE, archived by the run $1, without counting as archived (published) by it. Returns per tenant the
 * failed (`n`) and held-back (`held`) counts.
 */
export function archiveUnpublishedSql(t: RunTables): string {
  return `WITH moved AS (DELETE FROM ${t.messages} m RETURNING m.*),
     ins AS (
       INSERT INTO ${t.archive} (${ARCHIVE_COLUMNS}, archived_by) SELECT ${ARCHIVE_COLUMNS}, $1::uuid FROM moved
       ${ON_ARCHIVED_AGAIN}
       RETURNING message_id, hub_tenant_id
     )
     SELECT i.hub_tenant_id, count(*) FILTER (WHERE s.status IS DISTINCT FROM '${HELD_BACK}')::int AS n, count(*) FILTER (WHERE s.status = '${HELD_BACK}')::int AS held
       FROM ins i LEFT JOIN ${t.status} s ON s.message_id = i.message_id GROUP BY i.hub_tenant_id`;
}

/**
 * The start of a run: the FAILED and HELD_BACK messages of _ARCHIVE go back into _MESSAGES, the run's work queue, to
 * be published (or released) again under their messageIds. Idempotent (a resumed run finds them there already).
 */
export function requeueFailedSql(t: RunTables): string {
  return `INSERT INTO ${t.messages} (${ARCHIVE_COLUMNS})
     SELECT ${ARCHIVE_COLUMNS.split(", ").map((c) => `a.${c}`).join(", ")}
       FROM ${t.status} s JOIN ${t.archive} a ON a.message_id = s.message_id
      WHERE s.status IN ('FAILED', '${HELD_BACK}')
     ON CONFLICT (message_id) DO NOTHING`;
}
