/**
 * Step 5 of a run: the entities of the published messages still queued in _MESSAGES (the publish could not send them along:
 * ERS failing, or a run resumed after a kill) go to the ERS API of their tenant through an ErsStream, which archives
 * each message once its entities are sent. What is archived is done, so a resumed run starts where this one stopped,
 * sending again at most the requests that were in flight.
 */
import type { RunContext } from "../context";
import { ErsStream } from "./ersStream";
import { StatusWriter } from "./statusWriter";
import { bodyPages, missingBody, type StoredMessage } from "../warehouse/archive";
import { RunStopped } from "../stop";

/**
 * Sends every published message's entities; returns the number of entities sent by this run. Throws when ERS fails and
 * the contract says stop, and RunStopped when an open ERS link left messages queued (the next run sends them).
 */
export async function sendEntities(ctx: RunContext): Promise<{ sent: number; failed: number }> {
  const { ackPool, tables: t } = ctx.config;
  const status = new StatusWriter(ackPool, t, ctx.run.transactionId, 1, undefined, ctx.stop);
  const stream = new ErsStream(ctx, status);
  for await (const page of publishedMessages(ctx)) {
    await stream.add(page);
    if (stream.failure) break;
  }
  await stream.drain();
  await status.flush();
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- the first failure, rethrown as it was caught
  if (stream.failure) throw stream.failure;
  if (stream.held.size) throw new RunStopped([...stream.held].join("; "));
  return { sent: stream.sent, failed: stream.failedEntities };
}

/** Published messages still queued in _MESSAGES, oldest transaction first, by seq: a page by seq (the index), each one's status and body by its key. */
export async function* publishedMessages(ctx: RunContext, pageSize = 500): AsyncGenerator<StoredMessage[]> {
  const { pool, tables: t } = ctx.config;
  // Driven by what is left in _MESSAGES, each message's status looked up by its key: never a scan of _STATUS, which
  // keeps every message of every run.
  const { rows: transactions } = await pool.query<{ transaction_id: string }>(
    `SELECT m.transaction_id FROM ${t.messages} m
       CROSS JOIN LATERAL (SELECT 1 FROM ${t.status} s WHERE s.message_id = m.message_id AND s.status = 'PUBLISHED' LIMIT 1) st
      GROUP BY m.transaction_id ORDER BY min(m.created_at)`,
  );
  for (const { transaction_id: tx } of transactions) {
    let after = "-1";
    for (;;) {
      const { rows: listed } = await pool.query<{
        seq: string;
        message_id: string;
        hub_tenant_id: string;
        hub_destination: string;
        record_count: number;
        status: string | null;
        bytes: number | null;
      }>(
        `SELECT p.seq, p.message_id, p.hub_tenant_id, p.hub_destination, p.record_count, st.status, b.bytes
           FROM (SELECT message_id, seq, hub_tenant_id, hub_destination, record_count FROM ${t.messages} WHERE transaction_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) p
           LEFT JOIN LATERAL (SELECT s.status FROM ${t.status} s WHERE s.message_id = p.message_id) st ON true
           LEFT JOIN LATERAL (SELECT octet_length(a.body) AS bytes FROM ${t.archive} a WHERE a.message_id = p.message_id AND st.status = 'PUBLISHED') b ON true
          ORDER BY p.seq`,
        [tx, after, pageSize],
      );
      if (listed.length === 0) break;
      after = listed[listed.length - 1].seq;
      // Bodies a page of bodies at a time. Failed ones stay for the next run, and go to ERS once published.
      for await (const rows of bodyPages(pool, t, listed)) {
        const published = rows.filter((r) => r.status === "PUBLISHED");
        for (const r of published) if (r.body === null) throw missingBody(t, r.message_id, "published");
        if (published.length)
          yield published.map((r) => ({
            transactionId: ctx.run.transactionId,
            seq: r.seq,
            messageId: r.message_id,
            tenantId: r.hub_tenant_id,
            destination: r.hub_destination,
            recordCount: r.record_count,
            body: r.body!,
          }));
      }
    }
  }
}
