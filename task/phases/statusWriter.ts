/**
 * Writes publish outcomes to HUB_<CLIENT>_MESSAGES_STATUS in batches (one INSERT ... ON CONFLICT over unnest
 * arrays), one flush at a time. A message is acknowledged once its PUBLISHED row is committed: a run killed before
 * that publishes it again, with the same messageId. Messages whose entities went to ERS as well move to _ARCHIVE in
 * the same database transaction, while their rows are still in PostgreSQL's buffers: the finish has little left.
 */
import type { Pool } from "pg";
import type { MessageOutcome } from "../queue/broker";
import type { RunTables } from "../warehouse/tables";
import { archiveByIdSql } from "../warehouse/archive";
import { inTransaction } from "../warehouse/database";

export interface StatusRecord extends MessageOutcome {
  transactionId: string;
  tenantId: string;
  destination: string;
  /** Published and sent to ERS: the message moves to _ARCHIVE. */
  archive?: boolean;
}

const FLUSH_SIZE = 2000;
const FLUSH_MS = 250;

export class StatusWriter {
  private buffer: StatusRecord[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private error?: unknown;
  published = 0;
  failed = 0;

  constructor(
    private readonly pool: Pool,
    private readonly tables: RunTables,
    /** The run's transaction: archived_by of what it archives. */
    private readonly runTransactionId: string,
  ) {}

  /** Adds outcomes; resolves once the buffer is small again (backpressure for the publisher). */
  async add(records: StatusRecord[]): Promise<void> {
    if (this.error) throw this.error;
    for (const r of records) {
      this.buffer.push(r);
      if (r.published) this.published++;
      else this.failed++;
    }
    if (this.buffer.length >= FLUSH_SIZE) await this.flush();
    else this.timer ??= setTimeout(() => void this.flush().catch(() => {}), FLUSH_MS);
  }

  /** Writes what is buffered (after any flush in progress). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(() => (batch.length ? this.write(batch) : undefined));
    this.flushing.catch((err) => (this.error ??= err));
    return this.flushing;
  }

  private async write(batch: StatusRecord[]): Promise<void> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      await inTransaction(client, async () => {
        await client.query(
          `INSERT INTO ${this.tables.status} AS s (message_id, transaction_id, hub_tenant_id, hub_destination, status, attempts, reason, updated_at)
           SELECT id, tx, tenant, dest, CASE WHEN ok THEN 'PUBLISHED' ELSE 'FAILED' END, n, reason, now()
             FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::boolean[], $6::int[], $7::text[]) AS u(id, tx, tenant, dest, ok, n, reason)
           ON CONFLICT (message_id) DO UPDATE SET status = EXCLUDED.status, attempts = s.attempts + EXCLUDED.attempts, reason = EXCLUDED.reason, updated_at = now()`,
          [
            batch.map((r) => r.messageId),
            batch.map((r) => r.transactionId),
            batch.map((r) => r.tenantId),
            batch.map((r) => r.destination),
            batch.map((r) => r.published),
            batch.map((r) => r.attempts),
            batch.map((r) => (r.published ? null : (r.reason ?? "failed"))),
          ],
        );
        const archived = batch.filter((r) => r.published && r.archive).map((r) => r.messageId);
        if (archived.length) await client.query(archiveByIdSql(this.tables), [this.runTransactionId, archived]);
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
