/**
 * The bookkeeping of HUB_<CLIENT>_MESSAGES (the run's work queue, ids only) and _ARCHIVE (every message, its body
 * written once). A message leaves the queue when done (published and sent to ERS) or, unpublished, at the end of the
 * run; a failed one is queued again by the next run under its messageId, its one _ARCHIVE row then naming that run.
 */
import type { Pool } from "pg";
import { UserError } from "../../core/errors";
import type { RunTables } from "./tables";
import { MESSAGE_STATUS } from "./messageStatus";

/** The columns of a queue row (_MESSAGES): all are in _ARCHIVE too. */
const QUEUE_COLUMNS = "message_id, transaction_id, seq, hub_tenant_id, hub_destination, record_count, created_at";

/** Rows of _ARCHIVE of the queue rows `left` (of another transaction than the run `run`) now name the run. */
function archivedAgain(t: RunTables, left: string, run: string): string {
  return `UPDATE ${t.archive} a SET archived_by = ${run}::uuid, archived_at = now()
       FROM ${left} l WHERE a.message_id = l.message_id AND l.transaction_id <> ${run}::uuid`;
}

/**
 * One statement: `deleted` (a DELETE from the queue, aliased m, RETURNING m.*) is done, by the run `run` (a parameter,
 * $1 by default): added to the run's counts, a retried message's archive row marked as archived by the run. `before`
 * adds CTEs of the caller's (`name AS (...), `) to the same statement.
 */
export function archiveSql(t: RunTables, deleted: string, run = "$1", before = ""): string {
  return `WITH ${before}moved AS (${deleted}),
     again AS (${archivedAgain(t, "moved", run)})
     INSERT INTO ${t.runTenant} AS c (transaction_id, hub_tenant_id, messages, retried, entities)
     SELECT ${run}::uuid, hub_tenant_id, count(*), count(*) FILTER (WHERE transaction_id <> ${run}::uuid), sum(record_count) FROM moved GROUP BY hub_tenant_id ORDER BY hub_tenant_id
     ON CONFLICT (transaction_id, hub_tenant_id)
     DO UPDATE SET messages = c.messages + EXCLUDED.messages, retried = c.retried + EXCLUDED.retried, entities = c.entities + EXCLUDED.entities`;
}

/**
 * The end of a run: every message still queued (not published: FAILED; HELD_BACK by the strict CLS check; SET_ASIDE
 * by this run; SUPERSEDED by a newer message) leaves the queue, its archive row marked as tried by the run $1, without
 * counting as archived (published) by it. Returns per tenant the failed (`n`), held-back (`held`), set-aside (`aside`)
 * and superseded counts: only the failed ones make the run ExecutionFailed.
 */
export function archiveUnpublishedSql(t: RunTables): string {
  const S = MESSAGE_STATUS;
  return `WITH moved AS (DELETE FROM ${t.messages} m RETURNING m.message_id, m.transaction_id, m.hub_tenant_id),
     again AS (${archivedAgain(t, "moved", "$1")})
     SELECT m.hub_tenant_id, count(*) FILTER (WHERE s.status IS NULL OR s.status NOT IN ('${S.heldBack}', '${S.setAside}', '${S.superseded}'))::int AS n,
            count(*) FILTER (WHERE s.status = '${S.heldBack}')::int AS held, count(*) FILTER (WHERE s.status = '${S.setAside}')::int AS aside,
            count(*) FILTER (WHERE s.status = '${S.superseded}')::int AS superseded
       FROM moved m LEFT JOIN ${t.status} s ON s.message_id = m.message_id GROUP BY m.hub_tenant_id`;
}

/**
 * The start of a run: the FAILED and HELD_BACK messages of _ARCHIVE are queued again, to be published (or released)
 * under their messageIds. Idempotent (a resumed run finds them queued already). SET_ASIDE, SUPERSEDED and DISCARDED
 * ones stay where they are: an operator's `hub-export retry` makes a set-aside (or discarded) one FAILED again.
 */
export function requeueFailedSql(t: RunTables): string {
  return `INSERT INTO ${t.messages} (${QUEUE_COLUMNS})
     SELECT ${QUEUE_COLUMNS.split(", ")
       .map((c) => `a.${c}`)
       .join(", ")}
       FROM ${t.status} s JOIN ${t.archive} a ON a.message_id = s.message_id
      WHERE s.status IN ('${MESSAGE_STATUS.failed}', '${MESSAGE_STATUS.heldBack}')
     ON CONFLICT (message_id) DO NOTHING`;
}

/** A message still queued whose _ARCHIVE row (its body) is gone: deleted by hand, say, to save space. */
export function missingBody(t: RunTables, messageId: string, what: "queued" | "published"): UserError {
  return new UserError(
    `${t.archive} has no row for the ${what} message ${messageId} of ${t.messages} (deleted by hand?): its body is gone, so it cannot be sent; delete its row from ${t.messages} (its employees' next change exports them again), then run again`,
  );
}

/** Bytes of bodies read back from _ARCHIVE at a time, at most (at least one message): a page of large messages stays bounded. */
export const BODY_PAGE_BYTES = 8 * 1024 * 1024;

/**
 * The first rows (in their order, each with its body's size in `bytes`, null when it needs no body) whose bodies
 * together fit BODY_PAGE_BYTES (at least one row), with those bodies read from _ARCHIVE (null for those that need
 * none). `octet_length` of a stored body reads its size, not the body.
 */
export async function withBodies<T extends { message_id: string; bytes: number | null }>(
  pool: Pool,
  t: Pick<RunTables, "archive">,
  rows: T[],
): Promise<(T & { body: string | null })[]> {
  let bytes = 0;
  let n = 0;
  while (n < rows.length && (n === 0 || bytes + (rows[n].bytes ?? 0) <= BODY_PAGE_BYTES)) bytes += rows[n++].bytes ?? 0;
  const page = rows.slice(0, n);
  const wanted = page.filter((r) => r.bytes !== null).map((r) => r.message_id);
  const { rows: bodies } = wanted.length
    ? await pool.query<{ message_id: string; body: string }>(
        `SELECT message_id, body FROM ${t.archive} WHERE message_id = ANY($1::uuid[])`,
        [wanted],
      )
    : { rows: [] };
  const byId = new Map(bodies.map((b) => [b.message_id, b.body]));
  return page.map((r) => ({ ...r, body: byId.get(r.message_id) ?? null }));
}

/** A row of HUB_<CLIENT>_MESSAGES with its body. */
export interface QueueRow {
  seq: string;
  message_id: string;
  hub_tenant_id: string;
  hub_destination: string;
  record_count: number;
  body: string;
}

/**
 * The messages of `transactions` still queued that `wanted` (an SQL condition on their status, st.status) selects,
 * with their bodies: a page by seq (the index), each message's status by its key (never a scan of _STATUS, which
 * keeps every message of every run), bodies a page of bodies (withBodies) at a time. `where` narrows the page (parameters from $4).
 */
export async function* queuedMessages(
  pool: Pool,
  t: RunTables,
  transactions: { transaction_id: string }[],
  select: { wanted: string; where?: string; params?: unknown[]; what: "queued" | "published"; pageSize: number },
): AsyncGenerator<{ transactionId: string; rows: QueueRow[] }> {
  const wanted = `coalesce(${select.wanted}, false)`;
  for (const { transaction_id: tx } of transactions) {
    let after = "-1";
    for (;;) {
      const { rows: listed } = await pool.query<Omit<QueueRow, "body"> & { bytes: number | null; wanted: boolean }>(
        `SELECT p.seq, p.message_id, p.hub_tenant_id, p.hub_destination, p.record_count, b.bytes, ${wanted} AS wanted
           FROM (SELECT message_id, seq, hub_tenant_id, hub_destination, record_count FROM ${t.messages}
                  WHERE transaction_id = $1 AND seq > $2 ${select.where ?? ""} ORDER BY seq LIMIT $3) p
           LEFT JOIN LATERAL (SELECT s.status FROM ${t.status} s WHERE s.message_id = p.message_id) st ON true
           LEFT JOIN LATERAL (SELECT octet_length(a.body) AS bytes FROM ${t.archive} a WHERE a.message_id = p.message_id AND ${wanted}) b ON true
          ORDER BY p.seq`,
        [tx, after, select.pageSize, ...(select.params ?? [])],
      );
      if (listed.length === 0) break;
      after = listed[listed.length - 1].seq;
      for (let left = listed; left.length > 0;) {
        const page = await withBodies(pool, t, left);
        left = left.slice(page.length);
        const rows = page.filter((r) => r.wanted);
        for (const r of rows) if (r.body === null) throw missingBody(t, r.message_id, select.what);
        if (rows.length) yield { transactionId: tx, rows: rows as QueueRow[] };
      }
    }
  }
}

/** A queue row as the message it is, carrying the transaction id `transactionId`. */
export function storedMessage(r: QueueRow, transactionId: string): StoredMessage {
  return {
    transactionId,
    seq: r.seq,
    messageId: r.message_id,
    tenantId: r.hub_tenant_id,
    destination: r.hub_destination,
    recordCount: r.record_count,
    body: r.body,
  };
}

/** A stored message: queued in HUB_<CLIENT>_MESSAGES, its body read from _ARCHIVE (or returned by the extract). */
export interface StoredMessage {
  /**
   * The transaction id the message carries (properties, body header, ERS, _STATUS): that of the run publishing it,
   * also for a message an earlier transaction extracted (task/README.md, "Transaction ids").
   */
  transactionId: string;
  seq: string;
  messageId: string;
  tenantId: string;
  destination: string;
  recordCount: number;
  body: string;
  /**
   * Checked at the source (the extract statement, with --cls): the unknown codes of its employees, [employee id,
   * `Entity.Field=code` keys] (empty when none). Undefined for a message read back from _ARCHIVE: checked from its body.
   */
  unknownCodes?: [string, string[]][];
}
