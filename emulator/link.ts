/**
 * The network between the task and a remote hub: per API and region, a round-trip latency (fixed plus jitter, half
 * each way) and a token-bucket rate limit answering 429 with a Retry-After. The `--latency` and `--rate-limit` specs
 * are in emulator/README.md; every link draws from its own seeded PRNG stream.
 */
import { QUEUE_API } from "../core/hubContract";
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import { FaultSpecError, mulberry32, streamSeed } from "./faults";
import { HttpError } from "./http";

export const LINK_APIS = ["queue", "cfg", "ers", "hrsys"] as const;
export type LinkApi = (typeof LINK_APIS)[number];
export type LinkRegion = HubRegion | "ANY";

export interface LatencyRule {
  fixedMs: number;
  jitterMs: number;
}
export interface RateRule {
  perSecond: number;
  burst: number;
}
/** Target (`queue`, `queue.EU`, `*`, `*.US`) → rule. */
export type LinkRules<T> = Record<string, T>;

export interface LinkSettings {
  latency: LinkRules<LatencyRule>;
  rateLimit: LinkRules<RateRule>;
  /** 429 answers carry Retry-After (default true). */
  retryAfter: boolean;
}

/** What `startEmulator({link})` takes: specs as text or rules. */
export interface LinkInput {
  latency?: string | LinkRules<LatencyRule>;
  rateLimit?: string | LinkRules<RateRule>;
  retryAfter?: boolean;
}

const MAX_LATENCY_MS = 60_000;

function parseTarget(text: string, where: string): string {
  const [api, region, ...rest] = text.split(".");
  if (rest.length || !(api === "*" || (LINK_APIS as readonly string[]).includes(api))) {
    throw new FaultSpecError(
      `${where}: unknown target '${text}'; use ${[...LINK_APIS, "*"].join(", ")}, optionally with .${HUB_REGIONS.join("|.")}`,
    );
  }
  if (region !== undefined && !(HUB_REGIONS as readonly string[]).includes(region))
    throw new FaultSpecError(`${where}: unknown region '${region}'; use ${HUB_REGIONS.join(", ")}`);
  return region === undefined ? api : `${api}.${region}`;
}

function rules<T>(spec: string, parse: (value: string, where: string) => T): LinkRules<T> {
  const out: LinkRules<T> = {};
  const text = spec.trim();
  if (text === "" || text === "none") return out;
  text.split(",").forEach((item, index) => {
    const where = `rule ${index + 1} ('${item.trim()}')`;
    const eq = item.indexOf("=");
    if (eq < 0) throw new FaultSpecError(`${where}: expected <api>[.<region>]=<value>`);
    const target = parseTarget(item.slice(0, eq).trim(), where);
    if (target in out) throw new FaultSpecError(`${where}: '${target}' is given twice`);
    out[target] = parse(item.slice(eq + 1).trim(), where);
  });
  return out;
}

/** `queue=40ms±10,ers=80ms` → rules. */
export function parseLatencySpec(spec: string): LinkRules<LatencyRule> {
  return rules(spec, (value, where) => {
    const m = /^(\d+)(?:ms)?(?:\s*(?:±|\+-)\s*(\d+)(?:ms)?)?$/.exec(value);
    if (!m)
      throw new FaultSpecError(`${where}: expected whole milliseconds with an optional jitter, like 40ms or 40ms±10`);
    return checkLatency({ fixedMs: Number(m[1]), jitterMs: Number(m[2] ?? 0) }, where);
  });
}

/** `queue=2000/s,ers=50/s@10` → rules. */
export function parseRateLimitSpec(spec: string): LinkRules<RateRule> {
  return rules(spec, (value, where) => {
    const m = /^(\d+(?:\.\d+)?)\/s(?:@(\d+(?:\.\d+)?))?$/.exec(value);
    if (!m)
      throw new FaultSpecError(`${where}: expected a rate like 2000/s, optionally with a bucket size like 2000/s@400`);
    return checkRate(
      { perSecond: Number(m[1]), burst: m[2] === undefined ? defaultBurst(Number(m[1])) : Number(m[2]) },
      where,
    );
  });
}

function checkLatency(rule: LatencyRule, where: string): LatencyRule {
  for (const [key, v] of Object.entries(rule)) {
    if (!Number.isInteger(v) || v < 0 || v > MAX_LATENCY_MS)
      throw new FaultSpecError(`${where}: ${key} must be whole milliseconds from 0 to ${MAX_LATENCY_MS}`);
  }
  if (rule.jitterMs > rule.fixedMs)
    throw new FaultSpecError(
      `${where}: the jitter (${rule.jitterMs}) must not exceed the fixed latency (${rule.fixedMs})`,
    );
  return rule;
}

function checkRate(rule: RateRule, where: string): RateRule {
  if (!(rule.perSecond > 0)) throw new FaultSpecError(`${where}: the rate must be above 0`);
  if (!(rule.burst >= 1)) throw new FaultSpecError(`${where}: the bucket size must be at least 1`);
  return rule;
}

/** A tenth of a second's worth, at least one full queue batch. */
export function defaultBurst(perSecond: number): number {
  return Math.max(QUEUE_API.maxBatchSize, Math.round(perSecond / 10));
}

/** Validates input given as text or as rules (in-process, JSON). */
export function resolveLinkSettings(input: LinkInput = {}): LinkSettings {
  const latency =
    typeof input.latency === "string"
      ? parseLatencySpec(input.latency)
      : mapRules(input.latency ?? {}, "latency", checkLatency);
  const rateLimit =
    typeof input.rateLimit === "string"
      ? parseRateLimitSpec(input.rateLimit)
      : mapRules(input.rateLimit ?? {}, "rateLimit", checkRate);
  return { latency, rateLimit, retryAfter: input.retryAfter ?? true };
}

function mapRules<T>(raw: LinkRules<T>, option: string, check: (rule: T, where: string) => T): LinkRules<T> {
  const out: LinkRules<T> = {};
  for (const [target, rule] of Object.entries(raw))
    out[parseTarget(target, option)] = check({ ...rule }, `${option} '${target}'`);
  return out;
}

/** The spec text of rules, for printing. */
export function formatLinkSettings(s: LinkSettings): { latency: string; rateLimit: string; retryAfter: boolean } {
  const latency = Object.entries(s.latency).map(([t, r]) => `${t}=${r.fixedMs}ms${r.jitterMs ? `±${r.jitterMs}` : ""}`);
  const rate = Object.entries(s.rateLimit).map(([t, r]) => `${t}=${r.perSecond}/s@${r.burst}`);
  return { latency: latency.join(",") || "none", rateLimit: rate.join(",") || "none", retryAfter: s.retryAfter };
}

/** `GET /_emulator/state` → links: what each link saw. */
export interface LinkState {
  latency: LatencyRule | null;
  /** The rate limit; `unit` says what it counts. */
  limit: (RateRule & { unit: "messages" | "requests" }) | null;
  requests: number;
  /** Requests answered 429 by the rate limit. */
  throttled: number;
  /** Messages (queues) or requests (hub APIs) let through by the rate limit. */
  accepted: number;
  /** Seconds from the first request to the last one let through. */
  seconds: number;
  /** accepted / seconds, and requests / seconds. */
  achievedPerSecond: number;
  requestsPerSecond: number;
  /** achievedPerSecond / the limit (null without a limit). */
  fractionOfLimit: number | null;
}

class LinkModel {
  private draw: () => number;
  private tokens: number;
  private refilledAt: number;
  private stats = { requests: 0, throttled: 0, accepted: 0, firstAt: -1, lastAcceptedAt: -1 };

  constructor(
    name: string,
    private readonly api: LinkApi,
    private readonly latency: LatencyRule | undefined,
    private readonly rate: RateRule | undefined,
    seed: number,
    private readonly now: () => number,
  ) {
    this.draw = mulberry32(streamSeed(seed, `link:${name}`));
    this.tokens = rate?.burst ?? 0;
    this.refilledAt = now();
  }

  /** The round trip of the next request, in ms (one draw, always). */
  roundTripMs(): number {
    const r = this.draw();
    if (!this.latency) return 0;
    return Math.max(0, this.latency.fixedMs + (r * 2 - 1) * this.latency.jitterMs);
  }

  arrived(): void {
    this.stats.requests++;
    if (this.stats.firstAt < 0) this.stats.firstAt = this.now();
  }

  /** Takes `units` tokens, or throws 429 (with Retry-After: the whole seconds until the bucket could pay). */
  admit(units: number, retryAfter: boolean): void {
    if (this.rate) {
      const now = this.now();
      this.tokens = Math.min(this.rate.burst, this.tokens + ((now - this.refilledAt) / 1000) * this.rate.perSecond);
      this.refilledAt = now;
      if (this.tokens < units) {
        this.stats.throttled++;
        const seconds = Math.max(1, Math.ceil((Math.min(units, this.rate.burst) - this.tokens) / this.rate.perSecond));
        throw new HttpError(
          429,
          `rate limit of ${this.rate.perSecond} ${this.api === "queue" ? "messages" : "requests"}/s exceeded`,
          retryAfter ? { "retry-after": String(seconds) } : {},
        );
      }
      this.tokens -= units;
    }
    this.stats.accepted += units;
    this.stats.lastAcceptedAt = this.now();
  }

  snapshot(): LinkState {
    const s = this.stats;
    const seconds = s.firstAt >= 0 && s.lastAcceptedAt > s.firstAt ? (s.lastAcceptedAt - s.firstAt) / 1000 : 0;
    const achieved = seconds > 0 ? s.accepted / seconds : 0;
    return {
      latency: this.latency ?? null,
      limit: this.rate ? { ...this.rate, unit: this.api === "queue" ? "messages" : "requests" } : null,
      requests: s.requests,
      throttled: s.throttled,
      accepted: s.accepted,
      seconds: round(seconds),
      achievedPerSecond: round(achieved),
      requestsPerSecond: round(seconds > 0 ? s.requests / seconds : 0),
      fractionOfLimit: this.rate && seconds > 0 ? round(achieved / this.rate.perSecond, 4) : null,
    };
  }
}

/** The links of one emulator: created on first use, forgotten on reset. */
export class LinkEmulator {
  private links = new Map<string, LinkModel>();

  constructor(
    readonly settings: LinkSettings,
    private seed: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The most specific rule wins: `queue.EU`, `queue`, `*.EU`, `*` (no target names the region "ANY"). */
  link(api: LinkApi, region: LinkRegion): LinkModel {
    const name = `${api}.${region}`;
    const pick = <T>(rules: LinkRules<T>) => rules[name] ?? rules[api] ?? rules[`*.${region}`] ?? rules["*"];
    let link = this.links.get(name);
    if (!link) {
      link = new LinkModel(name, api, pick(this.settings.latency), pick(this.settings.rateLimit), this.seed, this.now);
      this.links.set(name, link);
    }
    return link;
  }

  /** Restarts every stream and bucket (the seed may change). */
  reset(seed = this.seed): void {
    this.seed = seed;
    this.links = new Map();
  }

  snapshot(): Record<string, LinkState> {
    return Object.fromEntries(
      [...this.links].sort(([a], [b]) => a.localeCompare(b)).map(([name, link]) => [name, link.snapshot()]),
    );
  }
}

function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
