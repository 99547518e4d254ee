/**
 * Step 4 of a run: each message to its tenant's destination queue in batches of up to 10, a lane per destination with
 * a bounded read-ahead and as many batches in flight as its link allows. A batch holds its slot until its PUBLISHED
 * rows are committed. A destination whose link opens is shut for the run; the run then stops, resumably.
 */
import {
  QUEUE_API,
  DATA_DOMAIN_CODE,
  ENTITY_NAME,
  contractProperties,
  type QueueMessageContract,
} from "../../core/hubContract";
import type { RunContext } from "../context";
import { QueueBroker, tooLarge, type MessageOutcome, type OutgoingMessage } from "../queue/broker";
import { StatusWriter, type StatusRecord } from "./statusWriter";
import { ErsStream } from "./ersStream";
import { Progress } from "../log";
import type { Link } from "../http/concurrency";
import { HubApiError } from "../hub/api";
import { utf8Body } from "../http/utf8Body";
import { ACK_POOL_SIZE } from "../warehouse/database";
import { withTransactionId } from "../mapping/messageBody";
import { queuedMessages, storedMessage, type StoredMessage } from "../warehouse/archive";
import { NOT_SENT } from "../warehouse/messageStatus";
import { LinkOpen } from "../http/breaker";
import { RunStopped } from "../stop";

/** Bytes of batch bodies in flight at most (one batch may exceed it): bounds memory when messages are large. */
const MAX_IN_FLIGHT_BYTES = 32 * 1024 * 1024;
/**
 * Characters of message bodies waiting per destination (the read-ahead): enough for a region's share of an extract
 * chunk or two, so that one region waiting for its queue never leaves another region's queue idle.
 */
const READ_AHEAD_CHARS = 2 * 1024 * 1024;

interface Pending {
  message: StoredMessage;
  out: OutgoingMessage;
}

const NONE: ReadonlySet<string> = new Set();

/** One hub destination: its broker, the messages waiting for a batch, and its batches in progress. */
export class Lane {
  readonly waiting: StoredMessage[] = [];
  /** Index of the first waiting message (the array is compacted now and then, not shifted). */
  head = 0;
  /** The first waiting message's JSON, when it was built for a batch it did not fit in: the next batch takes it as is. */
  headOut?: OutgoingMessage;
  waitingChars = 0;
  batches = 0;
  readonly room: (() => void)[] = [];
  /** Why the lane is shut: its queue link opened. Its messages stay queued (_MESSAGES) for the next run. */
  shut?: LinkOpen;
  constructor(
    readonly broker: QueueBroker,
    readonly link: Link,
  ) {}

  /** Batches in progress at most: what the link lets fly now, and a few more ready to go (their JSON is built). */
  get maxBatches(): number {
    return Math.min(this.link.controller.ceiling, this.link.controller.maxInFlight + 4);
  }

  get size(): number {
    return this.waiting.length - this.head;
  }

  /** Shuts the lane: what waits is dropped (it stays queued in _MESSAGES), and so is whatever comes. */
  close(why: LinkOpen): void {
    this.shut ??= why;
    this.waiting.length = 0;
    this.head = 0;
    this.headOut = undefined;
    this.waitingChars = 0;
    for (const wake of this.room.splice(0)) wake();
  }

  take(): StoredMessage {
    const m = this.waiting[this.head];
    this.headOut = undefined;
    this.waiting[this.head++] = undefined as unknown as StoredMessage;
    this.waitingChars -= m.body.length;
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    return m;
  }

  /**
   * Takes the next batch: up to 10 waiting messages whose joined body stays under the broker's limit. A message over
   * the limit by itself is never sent: it goes to `refuse` with its outcome. `build` makes a message's JSON.
   */
  nextBatch(
    build: (m: StoredMessage) => OutgoingMessage,
    refuse: (m: StoredMessage, outcome: MessageOutcome) => void,
    /** Messages not to send after all (superseded while they waited): they leave the lane unsent. */
    dropped: ReadonlySet<string> = NONE,
  ): { batch: Pending[]; bytes: number } {
    const batch: Pending[] = [];
    let bytes = 2;
    while (this.size > 0 && batch.length < QUEUE_API.maxBatchSize) {
      const next = this.waiting[this.head];
      if (dropped.has(next.messageId)) {
        this.take();
        continue;
      }
      const out = this.headOut ?? build(next);
      const early = tooLarge(out);
      if (early) {
        this.take();
        refuse(next, early);
        continue;
      }
      if (batch.length > 0 && bytes + out.json.length + 1 > QUEUE_API.maxBodyBytes) {
        this.headOut = out;
        break;
      }
      this.take();
      batch.push({ message: next, out });
      bytes += out.json.length + 1;
    }
    return { batch, bytes };
  }
}

export class Publisher {
  private readonly lanes = new Map<string, Lane>();
  private inFlight = 0;
  private inFlightBytes = 0;
  private draining = false;
  private readonly running = new Set<Promise<void>>();
  private readonly progress: Progress;
  /**
   * PUBLISHED and FAILED rows (a batch's slot waits for their commit), and done messages off the queue (an ERS
   * request's slot waits likewise): one writer for both, so that one statement carries whatever is ready of either.
   */
  readonly status: StatusWriter;
  readonly ers: ErsStream;
  /** Acknowledged by the broker, their PUBLISHED status committed. */
  acknowledged = 0;
  /** Set when a message was refused and the hub contract says stop (queueMessage.onFailure). */
  private failure?: Error;
  /** Properties' JSON texts, the same for every message of a transaction and tenant with one record count. */
  private readonly properties = new Map<string, string>();
  /** Messages superseded by a newer extract while they waited in a lane (supersede.ts): not sent. */
  private readonly dropped = new Set<string>();

  constructor(private readonly ctx: RunContext) {
    const { config, http, links } = ctx;
    for (const tenant of config.tenants) {
      if (this.lanes.has(tenant.hubDestination)) continue;
      const link = links.get("queue", tenant.region);
      this.lanes.set(
        tenant.hubDestination,
        new Lane(new QueueBroker(tenant.queue, http, link, links.breaker("queue", tenant.region)), link),
      );
    }
    this.status = new StatusWriter(
      config.ackPool,
      config.tables,
      ctx.run.transactionId,
      ACK_POOL_SIZE,
      config.definition.parameters.set_aside_after_runs,
      ctx.stop,
    );
    this.ers = new ErsStream(ctx, this.status);
    this.progress = new Progress(ctx.log, "publish");
  }

  /**
   * Queues messages for publishing, each destination apart; resolves when every destination has room for them
   * (backpressure: the read-ahead of a destination is bounded).
   */
  async submit(messages: StoredMessage[]): Promise<void> {
    const byLane = new Map<Lane, StoredMessage[]>();
    // No link left to publish on: the run stops now, resumably (what it stored stays queued).
    const shut = this.shut();
    if (shut && shut.length === this.lanes.size) throw new RunStopped(shut.join("; "));
    for (const message of messages) {
      if (this.failure) throw this.failure;
      const lane = this.lanes.get(message.destination);
      if (!lane) {
        await this.record(
          [message],
          [
            {
              messageId: message.messageId,
              published: false,
              reason: `no queue connection for hub destination ${message.destination}`,
              attempts: 0,
            },
          ],
        );
        continue;
      }
      const list = byLane.get(lane);
      if (list) list.push(message);
      else byLane.set(lane, [message]);
    }
    await Promise.all([...byLane].map(([lane, list]) => this.enqueue(lane, list)));
  }

  /**
   * Sends what is waiting, waits for every batch and its ERS requests, and writes the last statuses. Every batch: one
   * that fails (a stopping run's next batches fail at once) never leaves the others unrecorded behind the run's end.
   */
  async drain(): Promise<void> {
    this.draining = true;
    for (;;) {
      for (const lane of this.lanes.values()) this.pump(lane);
      if (this.running.size === 0) break;
      await Promise.allSettled([...this.running]);
    }
    await this.ers.drain();
    await this.status.settle();
    this.progress.tick(this.status.published + this.status.failed, this.counts(), true);
    if (this.failure) throw this.failure;
    // Destinations shut by an open link: their messages are still queued; the run stops before its finish.
    const shut = this.shut();
    if (shut) throw new RunStopped(shut.join("; "));
  }

  /** Why each shut destination is shut (its link's reason), or undefined when none is. */
  private shut(): string[] | undefined {
    const reasons = [...this.lanes.values()].flatMap((l) => (l.shut ? [l.shut.reason] : []));
    return reasons.length ? [...new Set(reasons)] : undefined;
  }

  /** Messages a newer extract superseded: those still waiting are not sent (their status says SUPERSEDED already). */
  forget(messageIds: readonly string[]): void {
    for (const id of messageIds) this.dropped.add(id);
  }

  counts() {
    return {
      published: this.status.published,
      failed: this.status.failed,
      inFlight: this.inFlight,
      ersEntities: this.ers.sent,
      reauthorizations: [...this.lanes.values()].reduce((n, l) => n + l.broker.reauthorizations, 0),
    };
  }

  private async enqueue(lane: Lane, messages: StoredMessage[]): Promise<void> {
    for (const message of messages) {
      // An empty lane takes a message whatever its size: what waits is bounded by the larger of the read-ahead and one message.
      while (lane.size > 0 && lane.waitingChars >= READ_AHEAD_CHARS)
        await new Promise<void>((resolve) => lane.room.push(resolve));
      if (lane.shut) return;
      lane.waiting.push(message);
      lane.waitingChars += message.body.length;
      this.pump(lane);
    }
  }

  /**
   * Starts the lane's batches while it has room: full batches of 10 (the last, smaller one when draining), within the
   * broker's body limit and the bytes in flight. A full read-ahead is sent as it is: no more messages can join it
   * (the extract waits for room), so waiting for 10 would wait forever.
   */
  private pump(lane: Lane): void {
    while (
      lane.size > 0 &&
      lane.batches < lane.maxBatches &&
      (this.draining || lane.size >= QUEUE_API.maxBatchSize || lane.waitingChars >= READ_AHEAD_CHARS)
    ) {
      if (this.inFlight > 0 && this.inFlightBytes >= MAX_IN_FLIGHT_BYTES) break;
      if (this.inFlight >= (this.ctx.settings.pinned.queue ?? Infinity)) break;
      const { batch, bytes } = lane.nextBatch(
        (m) => outgoing(m, this.propertiesJson(m)),
        (m, early) => this.track(this.record([m], [early])),
        this.dropped,
      );
      while (lane.room.length && lane.waitingChars < READ_AHEAD_CHARS) lane.room.shift()!();
      if (batch.length) this.send(lane, batch, bytes);
    }
  }

  private send(lane: Lane, batch: Pending[], bytes: number): void {
    lane.batches++;
    this.inFlight++;
    this.inFlightBytes += bytes;
    this.track(
      (async () => {
        try {
          const outcomes = await lane.broker.publish(batch.map((p) => p.out));
          const messages = batch.map((p) => p.message);
          await this.record(messages, outcomes);
        } catch (err) {
          // The link opened: this batch and the lane's others stay queued, unrecorded (neither failed nor refused).
          if (err instanceof LinkOpen) lane.close(err);
          throw err;
        } finally {
          lane.batches--;
          this.inFlight--;
          this.inFlightBytes -= bytes;
          for (const l of this.lanes.values()) this.pump(l);
        }
      })(),
    );
  }

  private propertiesJson(m: StoredMessage): string {
    const key = `${m.transactionId} ${m.tenantId} ${m.recordCount}`;
    let json = this.properties.get(key);
    if (json === undefined) {
      const { definition } = this.ctx.config;
      json = propertiesJson(m, definition.parameters.system_code, definition.hubContract.queueMessage);
      this.properties.set(key, json);
    }
    return json;
  }

  private track(task: Promise<void>): void {
    this.running.add(task);
    // A failing status write surfaces through StatusWriter.commit on the next batch and in drain().
    void task.catch(() => {}).finally(() => this.running.delete(task));
  }

  private async record(messages: StoredMessage[], outcomes: MessageOutcome[]): Promise<void> {
    const records: StatusRecord[] = outcomes.map((o, i) => ({
      ...o,
      transactionId: messages[i].transactionId,
      tenantId: messages[i].tenantId,
      destination: messages[i].destination,
    }));
    const failed = records.filter((r) => !r.published);
    for (const r of failed)
      this.ctx.log.warn(
        {
          event: "publish.failed",
          messageId: r.messageId,
          destination: r.destination,
          attempts: r.attempts,
          reason: r.reason,
        },
        "message not published",
      );
    if (failed.length && this.ctx.config.definition.hubContract.queueMessage.onFailure === "stop") {
      this.failure ??= new HubApiError(
        "QUEUE",
        `the broker refused message ${failed[0].messageId} for ${failed[0].destination} and hubContract.queueMessage.onFailure is stop: ${failed[0].reason}`,
      );
    }
    const published = records.filter((r) => r.published);
    // Acknowledged only once committed: the slot of this batch is held until then.
    await this.status.commit(records);
    this.acknowledged += published.length;
    if (published.length) await this.ers.add(messages.filter((_, i) => records[i].published));
    this.progress.tick(this.acknowledged + this.status.failed, this.counts());
  }
}

/** The broker's message: properties (as the hub contract names them: `propertiesJson`), headers.messageId, and the body as a JSON string. */
export function outgoing(m: StoredMessage, propertiesJson: string): OutgoingMessage {
  return {
    messageId: m.messageId,
    json: utf8Body([
      `{"properties":${propertiesJson},"headers":{"messageId":"${m.messageId}"},"body":`,
      JSON.stringify(m.body),
      "}",
    ]),
  };
}

/** The message's properties under the hub contract's names, as JSON. */
export function propertiesJson(m: StoredMessage, systemCode: string, contract: QueueMessageContract): string {
  return JSON.stringify(
    contractProperties(
      {
        transactionId: m.transactionId,
        tenantId: m.tenantId,
        systemCode,
        dataDomainCode: DATA_DOMAIN_CODE,
        entityName: ENTITY_NAME,
        recordCount: String(m.recordCount),
      },
      contract,
    ),
  );
}

/**
 * Messages stored before this run's extract that are not PUBLISHED yet: failed ones of earlier runs (retried with
 * their messageId, and carrying this run's transaction id), and those of this transaction extracted before a kill
 * (but those set aside or superseded meanwhile: NOT_SENT). Oldest transaction first, by seq.
 */
export async function* pendingMessages(ctx: RunContext, before: Date): AsyncGenerator<StoredMessage[]> {
  const { pool, tables: t } = ctx.config;
  const { rows: transactions } = await pool.query<{ transaction_id: string }>(
    `SELECT transaction_id FROM ${t.messages} WHERE created_at < $1 GROUP BY transaction_id ORDER BY min(created_at)`,
    [before],
  );
  // Published ones are skipped here, and so are those a resumed run finds set aside or superseded before its stop (no
  // run sends them).
  const pending = {
    wanted: "NOT coalesce(st.status = ANY($5::text[]), false)",
    where: "AND created_at < $4",
    params: [before, NOT_SENT],
    what: "queued" as const,
    pageSize: 1000,
  };
  const run = ctx.run.transactionId;
  for await (const { transactionId: tx, rows } of queuedMessages(pool, t, transactions, pending))
    yield rows.map((r) => storedMessage(tx === run ? r : { ...r, body: withTransactionId(r.body, run) }, run));
}
