/**
 * Writes publish outcomes to _STATUS and takes done messages off the queue, one statement carrying everything buffered
 * (group commit) on sessions that commit asynchronously. `commit()` resolves once the records are in the database and
 * the publisher holds a batch's slot until then, so after a kill at most the batches in flight are sent again. A
 * crash of the server loses the commits it had not flushed: the writes stay in memory until a flush barrier says they
 * are on disk, and are written again (on a fresh session) when the warehouse lost sessions meanwhile (`settle`).
 */
import type { Pool } from "pg";
import type { MessageOutcome } from "../queue/broker";
import type { RunTables } from "../warehouse/tables";
import { archiveSql } from "../warehouse/archive";
import { MESSAGE_STATUS } from "../warehouse/messageStatus";
import { TASK_PARAMETER_DEFAULTS } from "../../core/parameters";
import { commitsAsynchronously, flush, lostSessions, whileLost } from "../warehouse/database";

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

/** A write committed but not known to be on disk, with the sessions lost when it was sent (`lostSessions`). */
interface Unflushed extends Pending {
  lost: number;
}

/** Records written but not known to be on disk at most: past it, a flush barrier (memory stays bounded). */
const MAX_UNFLUSHED = 10_000;

export class StatusWriter {
  private buffer: Pending = empty();
  /** The next write, waiting for a lane; records committed meanwhile join it (group commit). */
  private next?: Promise<void>;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private error?: Error;
  /** Writes in progress (`settle` waits for them), and their records (not in the database yet). */
  private readonly writes = new Set<Promise<void>>();
  private readonly writing = new Set<Pending>();
  /** Committed asynchronously, not known to be on disk yet: written again after a lost session. */
  private unflushed: Unflushed[] = [];
  private unflushedRecords = 0;
  private readonly asynchronous: boolean;
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
     * The run's stop: a write whose session was lost is written again on a fresh one until `recordBy` (within its
     * grace period), so that what the hub acknowledged is recorded after a warehouse restart too (none: one try).
     */
    private readonly stop?: { recordBy(): number },
  ) {
    this.sql = acknowledgeSql(tables);
    this.asynchronous = commitsAsynchronously(pool);
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
      this.writes.add(next);
      next
        .catch((err) => {
          this.error ??= err instanceof Error ? err : new Error(String(err));
        })
        .finally(() => this.writes.delete(next));
    }
    return this.next;
  }

  /**
   * Writes what is buffered and waits until every write is on disk; what a lost session may have taken (a crash of
   * the server loses the commits it had not flushed) is written again, once the warehouse answers, until `recordBy`.
   * Rejects when that time is past (what is left: `unrecorded`).
   */
  async settle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.writes]);
      let failure: { error: unknown } | undefined;
      await this.flush().catch((error: unknown) => (failure = { error }));
      // Also after a failed write: what is confirmed on disk is not reported as unrecorded.
      await this.confirm();
      if (failure) throw failure.error;
      this.requeueIfLost();
      if (this.writes.size === 0 && isEmpty(this.buffer) && this.unflushed.length === 0) return;
    }
  }

  /**
   * The messages the hub acknowledged whose PUBLISHED status is not known to be in the database: buffered, being
   * written, or committed and not flushed. The next run sends them again (under the same messageIds).
   */
  unrecorded(): string[] {
    const writes = [this.buffer, ...this.writing, ...this.unflushed];
    return [...new Set(writes.flatMap((w) => w.statuses.filter((r) => r.published).map((r) => r.messageId)))];
  }

  private async writeBuffered(): Promise<void> {
    this.next = undefined;
    this.requeueIfLost();
    const pending = this.buffer;
    this.buffer = empty();
    this.writing.add(pending);
    try {
      if (this.error) throw this.error;
      // Tried again after a commit whose answer was lost, it is idempotent but for `attempts`, counted twice then.
      if (!isEmpty(pending))
        await whileLost(
          () => this.writeOnce(pending),
          () => this.stop?.recordBy() ?? 0,
        );
    } catch (err) {
      // Kept: `unrecorded` reports it.
      merge(this.buffer, pending);
      throw err;
    } finally {
      this.writing.delete(pending);
      this.active--;
      this.waiting.shift()?.();
    }
    if (this.unflushedRecords >= MAX_UNFLUSHED) await this.confirm();
  }

  /** After a lost session, the writes sent before it and not known to be on disk are written again. */
  private requeueIfLost(): void {
    const lost = lostSessions();
    const gone = this.unflushed.filter((w) => w.lost !== lost);
    if (gone.length === 0) return;
    this.unflushed = this.unflushed.filter((w) => w.lost === lost);
    for (const w of gone) {
      this.unflushedRecords -= size(w);
      merge(this.buffer, w);
    }
  }

  /** A flush barrier: the writes committed before it are on disk once it returns, unless a session was lost meanwhile. */
  private async confirm(): Promise<void> {
    if (this.unflushed.length === 0) return;
    const lost = lostSessions();
    const covered = new Set(this.unflushed.filter((w) => w.lost === lost));
    await whileLost(
      () => flush(this.pool),
      () => this.stop?.recordBy() ?? 0,
    );
    if (lostSessions() !== lost) return;
    this.unflushed = this.unflushed.filter((w) => !covered.has(w));
    for (const w of covered) this.unflushedRecords -= size(w);
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

  private async writeOnce(pending: Pending): Promise<void> {
    const { statuses, archive } = pending;
    const lost = lostSessions();
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
      if (this.asynchronous) {
        this.unflushed.push({ ...pending, lost });
        this.unflushedRecords += size(pending);
      }
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

function size(w: Pending): number {
  return w.statuses.length + w.archive.length;
}

function isEmpty(w: Pending): boolean {
  return size(w) === 0;
}

/** Adds `from`'s records to `into` (a write to make again). */
function merge(into: Pending, from: Pending): void {
  into.statuses.push(...from.statuses);
  into.archive.push(...from.archive);
}
