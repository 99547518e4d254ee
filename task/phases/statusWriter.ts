/**
 * Writes publish outcomes to _STATUS and takes done messages off the queue, one statement carrying everything buffered
 * (group commit) on sessions that commit asynchronously. `commit()` resolves once the records are in the database and
 * the publisher holds a batch's slot until then, so after a kill at most the batches in flight are sent again.
 */
import type { Pool } from "pg";
import type { MessageOutcome } from "../queue/broker";
import type { RunTables } from "../warehouse/tables";
import { archiveSql } from "../warehouse/archive";
import { MESSAGE_STATUS } from "../warehouse/messageStatus";
import { TASK_PARAMETER_DEFAULTS } from "../../core/parameters";
import { whileLost } from "../warehouse/database";

export interface StatusRecord extends MessageOutcome {
  transactionId: string;
  tenantId: string;
  destination: string;
}

/** A write: status rows to upsert, and ids of messages done (off the queue). */
interface Pending {
  statuses: StatusRecord[];
  archive: string[];
}

export class StatusWriter {
  private buffer: Pending = empty();
  /** The next write, waiting for a lane; records committed meanwhile join it (group commit). */
  private next?: Promise<void>;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private error?: Error;
  published = 0;
  failed = 0;

  private readonly sql: string;

  constructor(
    /** Sessions that commit asynchronously (RunConfiguration.ackPool): an acknowledgement is visible once committed. */
    private readonly pool: Pool,
    tables: RunTables,
    /** The run's transaction: archived_by of what it archives, and the transaction of the status rows it writes. */
    private readonly runTransactionId: string,
    /**
     * Writes at a time. Status rows of distinct messages never conflict; archive writes share the per-tenant count
     * rows, which they lock in tenant order (archiveSql), so concurrent writes cannot deadlock.
     */
    private readonly lanes = 1,
    /** The parameter set_aside_after_runs: a message refused for good by this many runs is set aside. */
    private readonly setAsideAfterRuns: number = TASK_PARAMETER_DEFAULTS.set_aside_after_runs,
    /**
     * The run's stop: a write whose session was lost is written again on a fresh one until its grace period ends, so
     * that what the hub acknowledged is recorded after a warehouse restart too (none: one try).
     */
    private readonly stop?: { graceEnd(): number },
  ) {
    this.sql = acknowledgeSql(tables);
  }

  /** Writes outcomes and archives messages; resolves once they are committed (with whatever else was buffered). */
  async commit(records: StatusRecord[], archive: string[] = []): Promise<void> {
    if (this.error) throw this.error;
    this.push(records, archive);
    await this.flush();
  }

  /** Writes what is buffered; resolves once it is committed, rejects if that write (or an earlier one) failed. */
  flush(): Promise<void> {
    if (!this.next) {
      // Once the I/O at hand is handled: answers that arrived together (publish batches, ERS requests) share a statement.
      const next = this.lane()
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => this.writeBuffered());
      this.next = next;
      next.catch((err) => {
        this.error ??= err instanceof Error ? err : new Error(String(err));
      });
    }
    return this.next;
  }

  private async writeBuffered(): Promise<void> {
    this.next = undefined;
    const pending = this.buffer;
    this.buffer = empty();
    try {
      if (this.error) throw this.error;
      // Tried again after a commit whose answer was lost, it is idempotent but for `attempts`, counted twice then.
      if (pending.statuses.length || pending.archive.length)
        await whileLost(
          () => this.writeOnce(pending),
          () => this.stop?.graceEnd() ?? 0,
        );
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  private lane(): Promise<void> {
    if (this.active < this.lanes) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.waiting.push(() => {
        this.active++;
        resolve();
      }),
    );
  }

  private push(records: StatusRecord[], archive: string[]): void {
    for (const r of records) {
      this.buffer.statuses.push(r);
      if (r.published) this.published++;
      else this.failed++;
    }
    for (const id of archive) this.buffer.archive.push(id);
  }

  private async writeOnce({ statuses, archive }: Pending): Promise<void> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      // Named: planned once per session.
      await client.query({
        name: "hub-export-acknowledge",
        text: this.sql,
        values: [
          statuses.map((r) => r.messageId),
          statuses.map((r) => r.transactionId),
          statuses.map((r) => r.tenantId),
          statuses.map((r) => r.destination),
          statuses.map((r) => r.published),
          statuses.map((r) => r.attempts),
          statuses.map((r) => (r.published ? null : (r.reason ?? "failed"))),
          this.runTransactionId,
          archive,
          statuses.map((r) => r.permanent === true),
          this.setAsideAfterRuns,
        ],
      });
    } catch (err) {
      failure = err as Error;
      throw err;
    } finally {
      // A client that failed is not given back to the pool as it is: its connection may be broken.
      client.release(failure);
    }
  }
}

/**
 * The write: outcomes upserted into _STATUS ($1 to $7, $10: refused for good), and the messages $9 done for the run $8
 * (archiveSql). The two parts touch different tables, so one snapshot serves both.
 *
 * A message refused for good by its $11-th run (the parameter set_aside_after_runs; a run counts once, resumed or not)
 * is SET_ASIDE with the reason; one a newer message superseded stays SUPERSEDED unless it was published after all (the
 * truth wins).
 */
function acknowledgeSql(tables: RunTables): string {
  const S = MESSAGE_STATUS;
  const aside = (runs: string, reason: string) =>
    `format('set aside after %s run(s) refused it for good; last refusal: %s', ${runs}, ${reason})`;
  // A refusal counts once per run: a run resumed after a stop that sends again a message it has refused already (its
  // row names the run and counts a refusal) does not count it again. (Had that earlier failure in the run not been a
  // refusal, the message is set aside a run later: never sooner than set_aside_after_runs runs.)
  const counts = `EXCLUDED.refusals > 0 AND (s.transaction_id <> EXCLUDED.transaction_id OR s.refusals = 0)`;
  const statuses = `statuses AS (
       INSERT INTO ${tables.status} AS s (message_id, transaction_id, hub_tenant_id, hub_destination, status, attempts, reason, updated_at, refusals, employee_ids)
       SELECT id, tx, tenant, dest, CASE WHEN ok THEN '${S.published}' WHEN refused AND $11 <= 1 THEN '${S.setAside}' ELSE '${S.failed}' END, n,
              CASE WHEN NOT ok AND refused AND $11 <= 1 THEN ${aside("1", "reason")} ELSE reason END, now(), CASE WHEN refused THEN 1 ELSE 0 END,
              CASE WHEN NOT ok THEN (SELECT a.employee_ids FROM ${tables.archive} a WHERE a.message_id = id) END
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::boolean[], $6::int[], $7::text[], $10::boolean[]) AS u(id, tx, tenant, dest, ok, n, reason, refused)
       ON CONFLICT (message_id) DO UPDATE SET
         transaction_id = EXCLUDED.transaction_id,
         refusals = s.refusals + CASE WHEN ${counts} THEN 1 ELSE 0 END,
         employee_ids = CASE WHEN EXCLUDED.status = '${S.published}' THEN NULL ELSE coalesce(s.employee_ids, EXCLUDED.employee_ids) END,
         status = CASE WHEN EXCLUDED.status = '${S.published}' THEN '${S.published}'
                       WHEN s.status = '${S.superseded}' THEN s.status
                       WHEN ${counts} AND s.refusals + 1 >= $11 THEN '${S.setAside}'
                       ELSE '${S.failed}' END,
         reason = CASE WHEN EXCLUDED.status = '${S.published}' THEN NULL
                       WHEN s.status = '${S.superseded}' THEN s.reason
                       WHEN ${counts} AND s.refusals + 1 >= $11 THEN ${aside("s.refusals + 1", "EXCLUDED.reason")}
                       ELSE EXCLUDED.reason END,
         attempts = s.attempts + EXCLUDED.attempts, updated_at = now()
     ),
     `;
  const done = `DELETE FROM ${tables.messages} m WHERE m.message_id = ANY($9::uuid[]) RETURNING m.*`;
  return archiveSql(tables, done, "$8", statuses);
}

function empty(): Pending {
  return { statuses: [], archive: [] };
}
