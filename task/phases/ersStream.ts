/**
 * ERS for published messages: their entities go to the tenant's ERS API in batches of records_per_ers_request (fewer
 * when wide entities would pass HUB_API_MAX_BODY_BYTES); a message leaves _MESSAGES in a commit the request's slot
 * waits for. The contract's onFailure decides a failing request (stop: the messages stay queued for the ERS phase, and
 * a tenant whose ERS link is open sends nothing more, `held`; record: they leave the queue).
 */
import type { RunContext } from "../context";
import type { TenantConfig } from "../load/configuration";
import { postToHub } from "../hub/api";
import { RunStopped } from "../stop";
import type { Link } from "../http/concurrency";
import { LinkOpen } from "../http/breaker";
import { Progress } from "../log";
import { entitiesText, entityTexts } from "../mapping/messageBody";
import { DATA_DOMAIN_CODE, ENTITY_NAME, HUB_API_MAX_BODY_BYTES } from "../../core/hubContract";
import type { StoredMessage } from "../warehouse/archive";
import { utf8Body } from "../http/utf8Body";
import type { StatusWriter } from "./statusWriter";

/** A published message waiting for its entities to reach ERS. */
interface Entry {
  messageId: string;
  /** Batches holding its entities and not sent yet (more than one when its entities span batches). */
  pieces: number;
  done: boolean;
}

interface Batch {
  transactionId: string;
  tenant: TenantConfig;
  entities: string[];
  count: number;
  /** UTF-8 bytes of the entities and the commas between them. */
  bytes: number;
  entries: Entry[];
}

/** The entities' share of an ERS request: the body limit less room for the envelope (ids, codes, names). */
const ERS_ENTITY_BYTES = HUB_API_MAX_BODY_BYTES - 4096;

export class ErsStream {
  private readonly buffers = new Map<string, Batch>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly byRegion = new Map<Link, Set<Promise<void>>>();
  private readonly tenants: Map<string, TenantConfig>;
  private readonly size: number;
  private readonly progress: Progress;
  /** The first failure under `onFailure: stop`: nothing more is sent. */
  failure?: unknown;
  /** Entities sent. */
  sent = 0;
  /** Entities ERS did not take, recorded under `onFailure: record`. */
  failedEntities = 0;
  /** Why messages stay queued because their ERS link is open (`onFailure: stop`): the link's reasons. */
  readonly held = new Set<string>();

  constructor(
    private readonly ctx: RunContext,
    private readonly status: StatusWriter,
  ) {
    this.tenants = new Map(ctx.config.tenants.map((x) => [x.hubTenantId, x]));
    this.size = ctx.config.definition.parameters.records_per_ers_request;
    this.progress = new Progress(ctx.log, "ers");
  }

  private get contract() {
    return this.ctx.config.definition.hubContract.ers;
  }

  /** Published messages (their PUBLISHED status committed); resolves when there is room for more (backpressure). */
  async add(messages: StoredMessage[]): Promise<void> {
    const archiveNow: string[] = [];
    for (const message of messages) {
      if (this.failure) continue; // stays in _MESSAGES for the ERS phase
      const tenant = this.tenants.get(message.tenantId);
      // ERS turned off, or a tenant removed from HUB_PLAT_CONFIG (no ERS to send to): archived as it is.
      if (!this.contract.enabled || !tenant) {
        archiveNow.push(message.messageId);
        continue;
      }
      if (this.shut(tenant)) continue; // its ERS link is open: it stays in _MESSAGES for the next run
      const entry: Entry = { messageId: message.messageId, pieces: 0, done: false };
      // The buffers change before any await: several publish batches add at once. A batch is sent when it holds
      // records_per_ers_request entities: a message that does not fit fills it, and the rest of it starts the next.
      // A batch whose bytes would pass ERS_ENTITY_BYTES is sent as it is, the message starting the next.
      const key = `${message.transactionId} ${message.tenantId}`;
      const full: Batch[] = [];
      let rest: string | string[] = entitiesText(message.body);
      const restBytes = Buffer.byteLength(rest);
      let left = message.recordCount;
      while (left > 0) {
        const batch = this.buffers.get(key) ?? {
          transactionId: message.transactionId,
          tenant,
          entities: [],
          count: 0,
          bytes: 0,
          entries: [],
        };
        const room = this.size - batch.count;
        const comma = batch.count > 0 ? 1 : 0;
        let take = rest;
        let n = left;
        let bytes = restBytes + comma;
        if (typeof rest !== "string" || left > room || batch.bytes + bytes > ERS_ENTITY_BYTES) {
          // The message's entities one by one (records_per_hub_message > 1, or wide entities): as many as there is
          // room for, by count and by bytes; an empty batch takes at least one.
          const each: string[] = typeof rest === "string" ? entityTexts(rest) : rest;
          let k = 0;
          bytes = 0;
          for (; k < Math.min(room, each.length); k++) {
            const next = Buffer.byteLength(each[k]) + (batch.count + k > 0 ? 1 : 0);
            if (batch.count + k > 0 && batch.bytes + bytes + next > ERS_ENTITY_BYTES) break;
            bytes += next;
          }
          if (k === 0) {
            if (batch.count === 0) break; // no entity left (a record count the body does not hold)
            full.push(batch);
            this.buffers.delete(key);
            rest = each;
            continue;
          }
          take = each.slice(0, k);
          rest = each.slice(k);
          n = k;
        }
        batch.entities.push(typeof take === "string" ? take : take.join(","));
        batch.count += n;
        batch.bytes += bytes;
        batch.entries.push(entry);
        entry.pieces++;
        left -= n;
        if (batch.count >= this.size) {
          full.push(batch);
          this.buffers.delete(key);
        } else this.buffers.set(key, batch);
      }
      if (entry.pieces === 0) archiveNow.push(message.messageId);
      for (const b of full) await this.send(b);
    }
    if (archiveNow.length) await this.status.commit([], archiveNow);
  }

  /** Sends what is buffered and waits for every request and its archive commit. */
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
    while (region.size >= link.controller.ceiling || this.inFlight.size >= total)
      await Promise.race(this.inFlight.size >= total ? this.inFlight : region);
    const request = this.post(batch, link)
      // A failing archive write surfaces through the status writer on its next commit and in its flush.
      .catch(() => {})
      .finally(() => {
        this.inFlight.delete(request);
        region.delete(request);
      });
    this.inFlight.add(request);
    region.add(request);
  }

  /** Under `onFailure: stop`, whether the tenant's ERS link is open: its messages stay queued (noted in `held`). */
  private shut(tenant: TenantConfig): boolean {
    const breaker = this.ctx.links.breaker("ers", tenant.region);
    if (this.contract.onFailure !== "stop" || !breaker.isOpen()) return false;
    this.held.add(breaker.error().reason);
    return true;
  }

  /** One request; the slot is held until the messages it completes are archived. */
  private async post(batch: Batch, link: Link): Promise<void> {
    if (this.failure || this.shut(batch.tenant)) return;
    const { tenant } = batch;
    try {
      const body = ersRequestBody(
        batch.transactionId,
        this.ctx.config.definition.parameters.system_code,
        batch.entities,
      );
      batch.entities = []; // the request holds the text now
      await postToHub(
        this.ctx.http,
        {
          api: "ERS",
          apiUrl: tenant.apis.ERS,
          path: this.contract.path,
          tenantId: tenant.hubTenantId,
          credentialsString: tenant.credentialsString,
          body,
        },
        link,
        this.ctx.links.breaker("ers", tenant.region),
      );
      this.sent += batch.count;
      this.progress.tick(this.sent);
    } catch (err) {
      // The link opened: under `stop` the messages stay queued and the other regions go on; `record` records it.
      if (err instanceof LinkOpen && this.shut(tenant)) return;
      // A stopping run: the messages stay queued for the next run, whatever the contract says.
      if (err instanceof RunStopped && !(err instanceof LinkOpen)) {
        this.failure ??= err;
        return;
      }
      if (this.contract.onFailure === "stop") {
        if (!this.failure) {
          this.failure = err;
          this.ctx.log.warn(
            { event: "ers.stream.stopped", tenantId: tenant.hubTenantId, reason: (err as Error).message },
            "ERS failed: published messages stay in _MESSAGES for the ERS phase",
          );
        }
        return;
      }
      this.failedEntities += batch.count;
      const reason = err instanceof LinkOpen ? err.reason : (err as Error).message;
      this.ctx.log.warn(
        {
          event: "hub.call.failed",
          api: "ERS",
          onFailure: "record",
          tenantId: tenant.hubTenantId,
          entities: batch.count,
          reason,
        },
        "ERS did not take a batch; recorded, the run goes on (hubContract.ers.onFailure: record)",
      );
    }
    const archive: string[] = [];
    for (const entry of batch.entries) {
      // A message is archived once, when its last piece is through.
      if (entry.done || --entry.pieces > 0) continue;
      entry.done = true;
      archive.push(entry.messageId);
    }
    if (archive.length) await this.status.commit([], archive);
  }
}

/** The ERS request of a transaction's entities (their JSON texts; one piece may hold several, joined by commas). */
export function ersRequestBody(transactionId: string, systemCode: string, entities: readonly string[]): Buffer {
  const pieces = [
    `{"transactionId":"${transactionId}","systemCode":${JSON.stringify(systemCode)},"dataDomainCode":"${DATA_DOMAIN_CODE}","entityName":"${ENTITY_NAME}","entities":[`,
  ];
  entities.forEach((entity, i) => (i ? pieces.push(",", entity) : pieces.push(entity)));
  pieces.push("]}");
  return utf8Body(pieces);
}
