/**
 * ERS alongside publishing: the entities of each acknowledged message go to its tenant's ERS API straight from the
 * publisher's memory, so the bodies are never read back from the database. Batches hold up to
 * records_per_ers_request entities of one transaction and tenant. Once all of a message's entities are sent, its
 * PUBLISHED status is written and it moves to _ARCHIVE, in one database transaction (statusWriter.ts): a message in
 * _ARCHIVE has reached the queue and ERS.
 *
 * If ERS fails for good, the stream stops sending: the published messages are recorded and stay in _MESSAGES, and
 * the ERS phase (ers.ts, with its saved progress) sends them after the publish, as it does for a resumed run.
 */
import type { RunContext } from "../context";
import type { TenantConfig } from "../load/configuration";
import { postToHub } from "../hub/api";
import type { Link } from "../http/concurrency";
import { Progress } from "../log";
import { entitiesText } from "../mapping/messageBody";
import { ersRequestBody, splitEntities } from "./ers";
import type { StoredMessage } from "./publish";
import type { StatusRecord, StatusWriter } from "./statusWriter";

/** A published message waiting for its entities to reach ERS. */
interface Entry {
  record: StatusRecord;
  /** Batches holding its entities and not sent yet (more than one only for a split message). */
  pieces: number;
  written: boolean;
}

interface Batch {
  transactionId: string;
  tenant: TenantConfig;
  entities: string[];
  count: number;
  entries: Entry[];
}

export class ErsStream {
  private readonly buffers = new Map<string, Batch>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly byRegion = new Map<Link, Set<Promise<void>>>();
  private readonly tenants: Map<string, TenantConfig>;
  private readonly size: number;
  private readonly progress: Progress;
  private failure?: unknown;
  /** Entities sent. */
  sent = 0;

  constructor(
    private readonly ctx: RunContext,
    private readonly status: StatusWriter,
  ) {
    this.tenants = new Map(ctx.config.tenants.map((x) => [x.hubTenantId, x]));
    this.size = ctx.config.definition.parameters.records_per_ers_request;
    this.progress = new Progress(ctx.log, "ers");
  }

  /** Published messages and their status records; resolves when there is room for more (backpressure). */
  async add(items: { message: StoredMessage; record: StatusRecord }[]): Promise<void> {
    for (const { message, record } of items) {
      const tenant = this.tenants.get(message.tenantId);
      if (this.failure || !tenant) {
        // A tenant removed from HUB_PLAT_CONFIG has no ERS to send to: archived as it is, like the ERS phase does.
        await this.status.add([{ ...record, archive: !tenant }]);
        continue;
      }
      const entry: Entry = { record, pieces: 1, written: false };
      const entities = entitiesText(message.body);
      if (message.recordCount > this.size) {
        // Rare (records_per_hub_message > records_per_ers_request): the message's entities split over batches.
        const slices = splitEntities(entities, this.size);
        entry.pieces = slices.length;
        for (const slice of slices) await this.send({ transactionId: message.transactionId, tenant, entities: slice, count: slice.length, entries: [entry] });
        continue;
      }
      // The buffers change before any await: several publish batches add at once.
      const key = `${message.transactionId} ${message.tenantId}`;
      const full: Batch[] = [];
      let batch = this.buffers.get(key);
      if (batch && batch.count + message.recordCount > this.size) {
        full.push(batch);
        batch = undefined;
      }
      if (!batch) {
        batch = { transactionId: message.transactionId, tenant, entities: [], count: 0, entries: [] };
        this.buffers.set(key, batch);
      }
      batch.entities.push(entities);
      batch.count += message.recordCount;
      batch.entries.push(entry);
      if (batch.count >= this.size) {
        full.push(batch);
        this.buffers.delete(key);
      }
      for (const b of full) await this.send(b);
    }
  }

  /** Sends what is buffered and waits for every request; the records are with the status writer afterwards. */
  async drain(): Promise<void> {
    for (const [key, batch] of [...this.buffers]) {
      this.buffers.delete(key);
      await this.send(batch);
    }
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    if (this.sent > 0) this.progress.tick(this.sent, {}, true);
  }

  /** Starts the request once its region has room: at most the ERS link's ceiling in progress per region (and the pinned number in all). */
  private async send(batch: Batch): Promise<void> {
    const link = this.ctx.links.get("ers", batch.tenant.region);
    let region = this.byRegion.get(link);
    if (!region) this.byRegion.set(link, (region = new Set()));
    const total = this.ctx.settings.pinned.ers ?? Infinity;
    while (region.size >= link.controller.ceiling || this.inFlight.size >= total) await Promise.race(this.inFlight.size >= total ? this.inFlight : region);
    const request = this.post(batch, link)
      // A failing status write surfaces through StatusWriter.add on the next records and in its flush.
      .catch(() => {})
      .finally(() => {
        this.inFlight.delete(request);
        region.delete(request);
      });
    this.inFlight.add(request);
    region.add(request);
  }

  private async post(batch: Batch, link: Link): Promise<void> {
    const { tenant } = batch;
    let sent = !this.failure;
    if (sent) {
      try {
        const body = ersRequestBody(batch.transactionId, this.ctx.config.definition.parameters.system_code, batch.entities.join(","));
        batch.entities = []; // the request holds the text now
        await postToHub(this.ctx.dispatcher, { api: "ERS", apiUrl: tenant.apis.ERS, tenantId: tenant.hubTenantId, credentialsString: tenant.credentialsString, body }, this.ctx.settings.retry, link);
        this.sent += batch.count;
        this.progress.tick(this.sent);
      } catch (err) {
        sent = false;
        if (!this.failure) {
          this.failure = err;
          this.ctx.log.warn({ event: "ers.stream.stopped", tenantId: tenant.hubTenantId, reason: (err as Error).message }, "ERS failed: published messages stay in _MESSAGES for the ERS phase");
        }
      }
    }
    const records: StatusRecord[] = [];
    for (const entry of batch.entries) {
      // A message is written once: archived when its last piece is sent, as it is when a piece fails.
      if (entry.written || (sent && --entry.pieces > 0)) continue;
      entry.written = true;
      records.push({ ...entry.record, archive: sent });
    }
    if (records.length) await this.status.add(records);
  }
}
