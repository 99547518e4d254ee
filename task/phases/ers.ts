/**
 * Step 5 of a run: the entities of published messages still queued (ERS failing, or a run resumed after a kill) go to
 * their tenant's ERS API through an ErsStream, which archives each message once its entities are sent: a resumed run
 * sends again at most the requests that were in flight.
 */
import type { RunContext } from "../context";
import { ErsStream } from "./ersStream";
import { StatusWriter } from "./statusWriter";
import { queuedMessages, storedMessage, type StoredMessage } from "../warehouse/archive";
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
  await status.settle();
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- the first failure, rethrown as it was caught
  if (stream.failure) throw stream.failure;
  if (stream.held.size) throw new RunStopped([...stream.held].join("; "));
  return { sent: stream.sent, failed: stream.failedEntities };
}

/** Published messages still queued in _MESSAGES, oldest transaction first, by seq. */
export async function* publishedMessages(ctx: RunContext): AsyncGenerator<StoredMessage[]> {
  const { pool, tables: t } = ctx.config;
  // Driven by what is left in _MESSAGES, each message's status looked up by its key: never a scan of _STATUS.
  const { rows: transactions } = await pool.query<{ transaction_id: string }>(
    `SELECT m.transaction_id FROM ${t.messages} m
       CROSS JOIN LATERAL (SELECT 1 FROM ${t.status} s WHERE s.message_id = m.message_id AND s.status = 'PUBLISHED' LIMIT 1) st
      GROUP BY m.transaction_id ORDER BY min(m.created_at)`,
  );
  const published = { wanted: "st.status = 'PUBLISHED'", what: "published" as const, pageSize: 500 };
  // Failed ones stay for the next run, and go to ERS once published.
  for await (const { rows } of queuedMessages(pool, t, transactions, published))
    yield rows.map((r) => storedMessage(r, ctx.run.transactionId));
}
