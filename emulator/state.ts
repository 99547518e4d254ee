/**
 * What the emulated hub has received: queue messages per destination, routing rules per tenant, ERS entity counts,
 * intake jobs. Kept compact, since the benchmark stores 100k+ messages: one Map entry per messageId, with the body
 * and properties only when the config retains bodies.
 */
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import type { RoutingRule } from "../core/routingRules";
import type { IntakeJobBody } from "../core/hubContract";
import type { FaultConfig, FaultEndpoint, FaultStats } from "./faults";
import type { LinkState } from "./link";

export interface StoredMessage {
  /** UTF-8 byte length of the body. */
  bytes: number;
  /** Times it was stored: more than 1 when a standard queue received it again (a duplicate delivery). */
  deliveries: number;
  properties?: Record<string, string>;
  body?: string;
}

/**
 * One queue. A standard queue is at-least-once: a re-published messageId is stored again and counted as a duplicate
 * delivery (its consumer sees it twice). With `deduplicate`, the first publish wins and a republish is only counted.
 * Messages are kept once per messageId with their delivery count, so the state stays compact.
 */
export class Destination {
  readonly messages = new Map<string, StoredMessage>();
  /** Messages stored, duplicate deliveries included (what a consumer would receive). */
  count = 0;
  /** Publishes of a messageId already received (stored again, or only counted when deduplicating). */
  duplicates = 0;
  /** Messages refused because the destination rejects permanently. */
  rejected = 0;
  bytes = 0;
}

export type PublishOutcome = "stored" | "duplicate" | "rejected";

export interface TenantRules {
  /** Rows of cfg_routing_rule, keyed by everything but status. */
  rows: Map<string, RoutingRule>;
  posts: number;
  /** Rows inserted or updated over all posts: a repeated POST of the same set leaves it unchanged. */
  changes: number;
}

export interface TenantEntities {
  requests: number;
  entities: number;
  /** Entities whose key (transaction and ERS_ENTITY_KEY) arrived before: re-sent entities. */
  duplicates: number;
  transactions: Map<string, number>;
  /** Entity key (`<transactionId> <key>`) → times received, when bodies are retained. */
  keys?: Map<string, number>;
}

export interface IntakeJobRecord extends IntakeJobBody {
  tenantId: string;
  receivedAt: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The JSON shape of `GET /_emulator/state` and `state()`.

export interface DestinationState {
  /** Messages stored, duplicate deliveries included. */
  count: number;
  /** Distinct messageIds. */
  distinct: number;
  duplicates: number;
  rejected: number;
  bytes: number;
  /** Only with `?messages=1` / `state({messages: true})`, and only the retained parts. */
  messages?: Array<{ messageId: string } & StoredMessage>;
}

export interface EmulatorState {
  queues: Record<HubRegion, { destinations: Record<string, DestinationState> }>;
  routingRules: Record<string, { rules: RoutingRule[]; posts: number; changes: number }>;
  ers: Record<
    string,
    {
      requests: number;
      entities: number;
      duplicates: number;
      transactions: Record<string, number>;
      received?: Record<string, number>;
    }
  >;
  intakeJobs: IntakeJobRecord[];
  /** The fault configuration in force, and what it injected since the last (re)seed. */
  faults: FaultConfig & { stats: Record<FaultEndpoint, FaultStats> };
  /** Per API and region (`queue.EU`, `ers.US`): latency, rate limit, requests, 429s and achieved rates (link.ts). */
  links: Record<string, LinkState>;
}

export interface RuleSetResult {
  inserted: number;
  updated: number;
  unchanged: number;
  total: number;
}

export class EmulatorStore {
  private queues = new Map<HubRegion, Map<string, Destination>>();
  private rules = new Map<string, TenantRules>();
  private entities = new Map<string, TenantEntities>();
  private jobs: IntakeJobRecord[] = [];

  constructor(
    private readonly retainBodies: boolean,
    /** true: a republished messageId is not stored again (a FIFO-like queue); false: a standard queue. */
    private readonly deduplicate = false,
  ) {
    this.reset();
  }

  reset(): void {
    this.queues = new Map(HUB_REGIONS.map((r) => [r, new Map<string, Destination>()]));
    this.rules = new Map();
    this.entities = new Map();
    this.jobs = [];
  }

  destination(region: HubRegion, queueName: string): Destination {
    const byName = this.queues.get(region)!;
    let dest = byName.get(queueName);
    if (!dest) byName.set(queueName, (dest = new Destination()));
    return dest;
  }

  /** Stores a message; a republished messageId is a duplicate delivery (stored again unless deduplicating). */
  publish(
    region: HubRegion,
    queueName: string,
    messageId: string,
    properties: Record<string, string>,
    body: string,
    reject: boolean,
  ): PublishOutcome {
    const dest = this.destination(region, queueName);
    if (reject) {
      dest.rejected++;
      return "rejected";
    }
    const bytes = Buffer.byteLength(body, "utf8");
    const known = dest.messages.get(messageId);
    if (known) {
      dest.duplicates++;
      if (this.deduplicate) return "duplicate";
      known.deliveries++;
    } else {
      dest.messages.set(
        messageId,
        this.retainBodies ? { bytes, deliveries: 1, properties, body } : { bytes, deliveries: 1 },
      );
    }
    dest.count++;
    dest.bytes += bytes;
    return known ? "duplicate" : "stored";
  }

  /** Merges a rule set into the tenant's rows: new keys are inserted, a changed status is updated, equal rows stay. */
  postRules(tenantId: string, rules: readonly RoutingRule[]): RuleSetResult {
    let tenant = this.rules.get(tenantId);
    if (!tenant) this.rules.set(tenantId, (tenant = { rows: new Map(), posts: 0, changes: 0 }));
    tenant.posts++;
    const result: RuleSetResult = { inserted: 0, updated: 0, unchanged: 0, total: 0 };
    for (const rule of rules) {
      const key = ruleKey(rule);
      const existing = tenant.rows.get(key);
      if (!existing) result.inserted++;
      else if (existing.status !== rule.status) result.updated++;
      else {
        result.unchanged++;
        continue;
      }
      tenant.rows.set(key, { ...rule });
    }
    tenant.changes += result.inserted + result.updated;
    result.total = tenant.rows.size;
    return result;
  }

  rulesOf(tenantId: string): RoutingRule[] {
    return [...(this.rules.get(tenantId)?.rows.values() ?? [])].map((r) => ({ ...r }));
  }

  /** Counts a request's entities; `keys` (their ERS_ENTITY_KEY values) find re-sent ones when bodies are retained. */
  recordEntities(tenantId: string, transactionId: string, count: number, keys: readonly string[] = []): void {
    let tenant = this.entities.get(tenantId);
    if (!tenant)
      this.entities.set(
        tenantId,
        (tenant = {
          requests: 0,
          entities: 0,
          duplicates: 0,
          transactions: new Map(),
          keys: this.retainBodies ? new Map() : undefined,
        }),
      );
    tenant.requests++;
    tenant.entities += count;
    tenant.transactions.set(transactionId, (tenant.transactions.get(transactionId) ?? 0) + count);
    for (const key of tenant.keys ? keys : []) {
      const k = `${transactionId} ${key}`;
      const seen = tenant.keys!.get(k) ?? 0;
      if (seen > 0) tenant.duplicates++;
      tenant.keys!.set(k, seen + 1);
    }
  }

  recordIntakeJob(job: IntakeJobRecord): void {
    this.jobs.push(job);
  }

  snapshot(options: { messages?: boolean } = {}): Omit<EmulatorState, "faults" | "links"> {
    const queues = {} as EmulatorState["queues"];
    for (const region of HUB_REGIONS) {
      const destinations: Record<string, DestinationState> = {};
      for (const [name, dest] of this.queues.get(region)!) {
        const state: DestinationState = {
          count: dest.count,
          distinct: dest.messages.size,
          duplicates: dest.duplicates,
          rejected: dest.rejected,
          bytes: dest.bytes,
        };
        if (options.messages) state.messages = [...dest.messages].map(([messageId, m]) => ({ messageId, ...m }));
        destinations[name] = state;
      }
      queues[region] = { destinations };
    }
    const routingRules: EmulatorState["routingRules"] = {};
    for (const [tenantId, t] of this.rules)
      routingRules[tenantId] = { rules: this.rulesOf(tenantId), posts: t.posts, changes: t.changes };
    const ers: EmulatorState["ers"] = {};
    for (const [tenantId, t] of this.entities) {
      ers[tenantId] = {
        requests: t.requests,
        entities: t.entities,
        duplicates: t.duplicates,
        transactions: Object.fromEntries(t.transactions),
      };
      if (options.messages && t.keys) ers[tenantId].received = Object.fromEntries(t.keys);
    }
    return { queues, routingRules, ers, intakeJobs: this.jobs.map((j) => ({ ...j })) };
  }
}

/** A row's identity in cfg_routing_rule: all fields but status. */
export function ruleKey(rule: RoutingRule): string {
  return `${rule.dataDomainCode}|${rule.isDataMastered}|${rule.systemRoleCodeSource}|${rule.systemRoleCodeTarget}`;
}
