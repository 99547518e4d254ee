/**
 * Step 4 of a run: each message goes to the queue of its tenant's hub destination, in batches of up to 10, with a
 * bounded number of batch PUTs in flight over keep-alive connections. Every outcome goes to _STATUS; a batch holds
 * its slot until its PUBLISHED rows are committed, so after a kill at most the batches in flight (publish concurrency
 * x 10 messages) are sent again. Published messages then go on to ERS (ersStream.ts), which moves them to _ARCHIVE.
 */
import { QUEUE_API, DATA_DOMAIN_CODE, ENTITY_NAME, contractProperties, type QueueMessageContract } from "../../core/hubContract";
import type { RunContext } from "../context";
import { QueueBroker, tooLarge, type MessageOutcome, type OutgoingMessage } from "../queue/broker";
import { StatusWriter, type StatusRecord } from "./statusWriter";
import { ErsStream } from "./ersStream";
import { Progress } from "../log";
import { HubApiError } from "../hub/api";

/** A stored message, as read from HUB_<CLIENT>_MESSAGES (or returned by the extract). */
export interface StoredMessage {
  transactionId: string;
  seq: string;
  messageId: string;
  tenantId: string;
  destination: string;
  recordCount: number;
  body: string;
}

/** Bytes of batch bodies in flight at most (one batch may exceed it): bounds memory when messages are large. */
const MAX_IN_FLIGHT_BYTES = 32 * 1024 * 1024;

interface Pending {
  message: StoredMessage;
  out: OutgoingMessage;
}

export class Publisher {
  private readonly brokers = new Map<string, QueueBroker>();
  private readonly buffers = new Map<string, Pending[]>();
  private readonly buffered = new Map<string, number>();
  private inFlight = 0;
  private inFlightBytes = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly progress: Progress;
  /** PUBLISHED and FAILED rows: a batch's slot waits for its commit. */
  readonly status: StatusWriter;
  /** Moves to _ARCHIVE: an ERS request's slot waits for its commit. */
  private readonly archive: StatusWriter;
  readonly ers: ErsStream;
  submitted = 0;
  /** Acknowledged by the broker, their PUBLISHED status committed. */
  acknowledged = 0;
  /** Set when a message was refused and the hub contract says stop (queueMessage.onFailure). */
  private failure?: Error;

  constructor(private readonly ctx: RunContext) {
    const { config, dispatcher, settings } = ctx;
    for (const tenant of config.tenants) {
      if (!this.brokers.has(tenant.hubDestination)) this.brokers.set(tenant.hubDestination, new QueueBroker(tenant.queue, dispatcher, settings.retry));
    }
    this.status = new StatusWriter(config.pool, config.tables, ctx.run.transactionId, 2);
    this.archive = new StatusWriter(config.pool, config.tables, ctx.run.transactionId, 2);
    this.ers = new ErsStream(ctx, this.archive);
    this.progress = new Progress(ctx.log, "publish");
  }

  /** Queues messages for publishing; resolves when there is room for more (backpressure). */
  async submit(messages: StoredMessage[]): Promise<void> {
    for (const message of messages) {
      if (this.failure) throw this.failure;
      this.submitted++;
      const out = outgoing(message, this.ctx.config.definition.parameters.system_code, this.ctx.config.definition.hubContract.queueMessage);
      const early = tooLarge(out) ?? (this.brokers.has(message.destination) ? undefined : { messageId: message.messageId, published: false, reason: `no queue connection for hub destination ${message.destination}`, attempts: 0 });
      if (early) {
        await this.record([message], [early]);
        continue;
      }
      const buffer = this.buffers.get(message.destination) ?? [];
      const bytes = this.buffered.get(message.destination) ?? 2;
      // A batch holds up to 10 messages and its body stays under the broker's limit.
      if (buffer.length > 0 && (buffer.length >= QUEUE_API.maxBatchSize || bytes + out.bytes + 1 > QUEUE_API.maxBodyBytes)) {
        await this.dispatch(message.destination);
      }
      const next = this.buffers.get(message.destination) ?? [];
      next.push({ message, out });
      this.buffers.set(message.destination, next);
      this.buffered.set(message.destination, (this.buffered.get(message.destination) ?? 2) + out.bytes + 1);
      if (next.length >= QUEUE_API.maxBatchSize) await this.dispatch(message.destination);
    }
  }

  /** Sends what is buffered, waits for every batch and its ERS requests, and writes the last statuses. */
  async drain(): Promise<void> {
    for (const destination of [...this.buffers.keys()]) await this.dispatch(destination);
    while (this.running.size > 0) await Promise.all([...this.running]);
    await this.ers.drain();
    await Promise.all([this.status.flush(), this.archive.flush()]);
    this.progress.tick(this.status.published + this.status.failed, this.counts(), true);
    if (this.failure) throw this.failure;
  }

  counts() {
    return { published: this.status.published, failed: this.status.failed, inFlight: this.inFlight, ersEntities: this.ers.sent, reauthorizations: [...this.brokers.values()].reduce((n, b) => n + b.reauthorizations, 0) };
  }

  private async dispatch(destination: string): Promise<void> {
    const batch = this.buffers.get(destination);
    this.buffers.delete(destination);
    this.buffered.delete(destination);
    if (!batch?.length) return;
    const bytes = batch.reduce((n, p) => n + p.out.bytes, 0);
    while (this.inFlight >= this.ctx.settings.publishConcurrency || (this.inFlight > 0 && this.inFlightBytes + bytes > MAX_IN_FLIGHT_BYTES)) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.inFlight++;
    this.inFlightBytes += bytes;
    const broker = this.brokers.get(destination)!;
    const task = (async () => {
      try {
        const outcomes = await broker.publish(batch.map((p) => p.out));
        await this.record(batch.map((p) => p.message), outcomes);
      } finally {
        this.inFlight--;
        this.inFlightBytes -= bytes;
        this.waiting.shift()?.();
      }
    })();
    this.running.add(task);
    // A failing status write surfaces through StatusWriter.add on the next batch and in drain().
    void task.catch(() => {}).finally(() => this.running.delete(task));
  }

  private async record(messages: StoredMessage[], outcomes: MessageOutcome[]): Promise<void> {
    const records: StatusRecord[] = outcomes.map((o, i) => ({ ...o, transactionId: messages[i].transactionId, tenantId: messages[i].tenantId, destination: messages[i].destination }));
    const failed = records.filter((r) => !r.published);
    for (const r of failed) this.ctx.log.warn({ event: "publish.failed", messageId: r.messageId, destination: r.destination, attempts: r.attempts, reason: r.reason }, "message not published");
    if (failed.length && this.ctx.config.definition.hubContract.queueMessage.onFailure === "stop") {
      this.failure ??= new HubApiError("QUEUE", `the broker refused message ${failed[0].messageId} for ${failed[0].destination} and hubContract.queueMessage.onFailure is stop: ${failed[0].reason}`);
    }
    const published = records.filter((r) => r.published);
    // Acknowledged only once committed: the slot of this batch is held until then.
    await this.status.commit(records);
    this.acknowledged += published.length;
    if (published.length) await this.ers.add(messages.filter((_, i) => records[i].published));
    this.progress.tick(this.acknowledged + this.status.failed, this.counts());
  }
}

/** The broker's message: properties (as the hub contract names them), headers.messageId, and the body as a JSON string. */
export function outgoing(m: StoredMessage, systemCode: string, contract: QueueMessageContract): OutgoingMessage {
  const properties = contractProperties({ transactionId: m.transactionId, tenantId: m.tenantId, systemCode, dataDomainCode: DATA_DOMAIN_CODE, entityName: ENTITY_NAME, recordCount: String(m.recordCount) }, contract);
  const json = `{"properties":${JSON.stringify(properties)},"headers":{"messageId":"${m.messageId}"},"body":${JSON.stringify(m.body)}}`;
  return { messageId: m.messageId, json, bytes: Buffer.byteLength(json) };
}

/**
 * Messages stored before this run's extract that are not PUBLISHED yet: failed ones of earlier runs (retried with
 * their messageId), and those of this transaction extracted before a kill. Oldest transaction first, by seq.
 */
export async function* pendingMessages(ctx: RunContext, before: Date, pageSize = 1000): AsyncGenerator<StoredMessage[]> {
  const { pool, tables: t } = ctx.config;
  const { rows: transactions } = await pool.query<{ transaction_id: string }>(
    `SELECT transaction_id FROM ${t.messages} WHERE created_at < $1 GROUP BY transaction_id ORDER BY min(created_at)`,
    [before],
  );
  for (const { transaction_id: tx } of transactions) {
    let after = "-1";
    for (;;) {
      // A page by seq (the index), each message's status by its key; published ones are skipped here.
      const { rows } = await pool.query<{ seq: string; message_id: string; hub_tenant_id: string; hub_destination: string; record_count: number; body: string; published: boolean }>(
        `SELECT p.seq, p.message_id, p.hub_tenant_id, p.hub_destination, p.record_count, CASE WHEN st.status = 'PUBLISHED' THEN NULL ELSE p.body END AS body,
                coalesce(st.status = 'PUBLISHED', false) AS published
           FROM (SELECT message_id, seq, hub_tenant_id, hub_destination, record_count, body FROM ${t.messages}
                  WHERE transaction_id = $1 AND seq > $2 AND created_at < $3 ORDER BY seq LIMIT $4) p
           LEFT JOIN LATERAL (SELECT s.status FROM ${t.status} s WHERE s.message_id = p.message_id) st ON true
          ORDER BY p.seq`,
        [tx, after, before, pageSize],
      );
      if (rows.length === 0) break;
      after = rows[rows.length - 1].seq;
      const pending = rows.filter((r) => !r.published);
      if (pending.length) yield pending.map((r) => ({ transactionId: tx, seq: r.seq, messageId: r.message_id, tenantId: r.hub_tenant_id, destination: r.hub_destination, recordCount: r.record_count, body: r.body }));
    }
  }
}
