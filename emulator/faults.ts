/**
 * Fault injection per endpoint (the `--faults` spec: emulator/README.md): error answers, connection resets, lost
 * replies, token expiry, added latency and a hostile hub's answers (emulator/hostile.ts). A seeded PRNG stream per
 * endpoint, so one endpoint sees the same faults for the same seed whatever the traffic elsewhere.
 */
import { z } from "zod";
import { HUB_REGIONS, type HubRegion } from "../core/regions";

export const FAULT_ENDPOINTS = [
  "queue.authorize",
  "queue.publish",
  "cfg.routingRules",
  "ers.entities",
  "hrsys.intakeJobs",
] as const;
export type FaultEndpoint = (typeof FAULT_ENDPOINTS)[number];
/** `*`, an endpoint, or an endpoint in one hub region (`queue.publish.EU`). */
export type FaultTarget = FaultEndpoint | "*" | `${FaultEndpoint}.${HubRegion}`;

/** One rule, as written in the spec or in the JSON of `POST /_emulator/faults`: rates, latency (ms), rates by status. */
export type FaultSettings = Partial<Record<RateKey | "latency", number>> & { [status: number]: number | undefined };
export type FaultRules = Partial<Record<FaultTarget, FaultSettings>>;

/** The fault configuration in force: validated rules and the seed of the PRNG streams. */
export interface FaultConfig {
  seed: number;
  rules: FaultRules;
}

/** What `setFaults` and `POST /_emulator/faults` take: a text spec or rules; a missing seed keeps the current one. */
export type FaultsInput = string | { spec?: string; rules?: FaultRules; seed?: number };

export const DEFAULT_SEED = 1;
const MAX_LATENCY_MS = 60_000;
/** A hostile hub's answers (emulator/hostile.ts), each a rate like the others. */
export const HOSTILE_KINDS = ["drip", "silence", "huge", "echo", "escape", "wrongBody"] as const;
export type HostileKind = (typeof HOSTILE_KINDS)[number];
const RATE_KEYS = ["reset", "resetAfter", "tokenExpiry", ...HOSTILE_KINDS] as const;
type RateKey = (typeof RATE_KEYS)[number];

export class FaultSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FaultSpecError";
  }
}

function isTarget(value: string): value is FaultTarget {
  const dot = value.lastIndexOf(".");
  const regional = dot > 0 && (HUB_REGIONS as readonly string[]).includes(value.slice(dot + 1));
  return value === "*" || (FAULT_ENDPOINTS as readonly string[]).includes(regional ? value.slice(0, dot) : value);
}

const TARGETS_TEXT = `${[...FAULT_ENDPOINTS, "*"].join(", ")}, or an endpoint in one hub region (${FAULT_ENDPOINTS[1]}.EU)`;

/** Parses the text spec into rules (validated). An empty spec or `none` means no faults. */
export function parseFaultSpec(spec: string): FaultRules {
  const text = spec.trim();
  if (text === "" || text === "none") return {};
  const raw: Record<string, Record<string, number>> = {};
  text.split(";").forEach((ruleText, index) => {
    const where = `fault spec rule ${index + 1} ('${ruleText.trim()}')`;
    const colon = ruleText.indexOf(":");
    if (colon < 0) throw new FaultSpecError(`${where}: expected <endpoint>:<key>=<value>[,...]`);
    const target = ruleText.slice(0, colon).trim();
    if (!isTarget(target))
      throw new FaultSpecError(`${where}: unknown endpoint '${target}'; use one of ${TARGETS_TEXT}`);
    if (raw[target]) throw new FaultSpecError(`${where}: endpoint '${target}' is given twice`);
    const settings: Record<string, number> = {};
    for (const item of ruleText.slice(colon + 1).split(",")) {
      const eq = item.indexOf("=");
      const key = (eq < 0 ? item : item.slice(0, eq)).trim();
      const value = eq < 0 ? "" : item.slice(eq + 1).trim();
      if (eq < 0 || key === "" || value === "")
        throw new FaultSpecError(`${where}: expected <key>=<value>, got '${item.trim()}'`);
      if (key in settings) throw new FaultSpecError(`${where}: key '${key}' is given twice`);
      if (!/^\d+(\.\d+)?$|^\.\d+$/.test(value))
        throw new FaultSpecError(`${where}: ${key} must be a number, got '${value}'`);
      settings[key] = Number(value);
    }
    raw[target] = settings;
  });
  return validateFaultRules(raw);
}

/** Checks keys and values of rules given as an object (JSON body, in-process); errors name the rule and key. */
export function validateFaultRules(raw: unknown): FaultRules {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new FaultSpecError("fault rules must be an object of endpoint → settings");
  const rules: FaultRules = {};
  for (const [target, settingsRaw] of Object.entries(raw as Record<string, unknown>)) {
    if (!isTarget(target)) throw new FaultSpecError(`unknown endpoint '${target}'; use one of ${TARGETS_TEXT}`);
    if (settingsRaw === null || typeof settingsRaw !== "object" || Array.isArray(settingsRaw)) {
      throw new FaultSpecError(`${target}: settings must be an object of key → number`);
    }
    const settings: FaultSettings = {};
    for (const [key, value] of Object.entries(settingsRaw as Record<string, unknown>)) {
      const at = `${target}: ${key}`;
      if (typeof value !== "number" || !Number.isFinite(value)) throw new FaultSpecError(`${at} must be a number`);
      if (key === "latency") {
        if (!Number.isInteger(value) || value < 0 || value > MAX_LATENCY_MS)
          throw new FaultSpecError(`${at} must be whole milliseconds from 0 to ${MAX_LATENCY_MS}`);
        settings.latency = value;
        continue;
      }
      const isStatus = /^[45]\d\d$/.test(key);
      if (!isStatus && !(RATE_KEYS as readonly string[]).includes(key)) {
        throw new FaultSpecError(
          `${target}: unknown key '${key}'; use a status code 400..599, reset, resetAfter, tokenExpiry, latency or a hostile answer (${HOSTILE_KINDS.join(", ")})`,
        );
      }
      if (value < 0 || value > 1) throw new FaultSpecError(`${at} must be a rate between 0 and 1`);
      if (key === "tokenExpiry" && target !== "*" && !target.startsWith("queue.publish")) {
        throw new FaultSpecError(
          `${at}: tokenExpiry applies to queue.publish only (the one endpoint that takes bearer tokens)`,
        );
      }
      if (isStatus) settings[Number(key)] = value;
      else settings[key as RateKey] = value;
    }
    rules[target] = settings;
  }
  for (const endpoint of FAULT_ENDPOINTS) {
    for (const region of [undefined, ...HUB_REGIONS]) {
      const total = plan(rules, endpoint, region).outcomes.reduce((sum, o) => sum + o.rate, 0);
      const name = region ? `${endpoint}.${region}` : endpoint;
      if (total > 1 + 1e-9)
        throw new FaultSpecError(
          `${name}: fault rates add up to ${Math.round(total * 1e6) / 1e6}, more than 1 (counting '*'${region ? ` and ${endpoint}` : ""})`,
        );
    }
  }
  return rules;
}

const faultsBodySchema = z.strictObject({
  spec: z.string().optional(),
  rules: z.record(z.string(), z.unknown()).optional(),
  seed: z.number().int().min(0).max(0xffffffff).optional(),
});

/** Turns a FaultsInput (text, object, or parsed JSON body) into a FaultConfig; `currentSeed` fills a missing seed. */
export function resolveFaults(input: unknown, currentSeed: number): FaultConfig {
  if (typeof input === "string") return { seed: currentSeed, rules: parseFaultSpec(input) };
  const parsed = faultsBodySchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new FaultSpecError(`faults: ${issue.path.join(".") || "body"}: ${issue.message}`);
  }
  const { spec, rules, seed } = parsed.data;
  if (spec !== undefined && rules !== undefined)
    throw new FaultSpecError("faults: give either spec or rules, not both");
  return {
    seed: seed ?? currentSeed,
    rules: spec !== undefined ? parseFaultSpec(spec) : validateFaultRules(rules ?? {}),
  };
}

/** Parses a seed given as text (CLI): an integer from 0 to 2^32-1. */
export function parseSeed(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 0xffffffff)
    throw new FaultSpecError(`seed must be an integer from 0 to 4294967295, got '${text}'`);
  return Number(text);
}

/** The spec text of a rule set, for printing. */
export function formatFaultRules(rules: FaultRules): string {
  const parts = Object.entries(rules).map(
    ([target, settings]) =>
      `${target}:${Object.entries(settings ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(",")}`,
  );
  return parts.length ? parts.join(";") : "none";
}

// ---------------------------------------------------------------------------------------------------------------

export type FaultKind = "status" | "reset" | "resetAfter" | "tokenExpiry" | HostileKind;
export interface FaultDecision {
  /** Undefined: no fault, process normally. */
  kind?: FaultKind;
  /** The answer's status when kind is "status". */
  status?: number;
  latencyMs: number;
}

interface Outcome {
  kind: FaultKind;
  status?: number;
  rate: number;
}
interface EndpointPlan {
  outcomes: Outcome[];
  latencyMs: number;
}

/**
 * An endpoint's effective rule (in a region): `*` merged with its own and its region's, key by key; outcomes in a fixed
 * order so draws map stably.
 */
function plan(rules: FaultRules, endpoint: FaultEndpoint, region?: HubRegion): EndpointPlan {
  const merged: FaultSettings = {
    ...rules["*"],
    ...rules[endpoint],
    ...(region ? rules[`${endpoint}.${region}`] : {}),
  };
  const outcomes: Outcome[] = [];
  for (const kind of ["reset", "resetAfter", ...HOSTILE_KINDS] as const)
    if (merged[kind]) outcomes.push({ kind, rate: merged[kind] });
  const statuses = Object.keys(merged)
    .filter((k) => /^\d+$/.test(k))
    .map(Number)
    .sort((a, b) => a - b);
  for (const status of statuses) if (merged[status]) outcomes.push({ kind: "status", status, rate: merged[status] });
  // Only the publish endpoint takes bearer tokens; elsewhere a tokenExpiry draw is a pass.
  if (merged.tokenExpiry && endpoint === "queue.publish")
    outcomes.push({ kind: "tokenExpiry", rate: merged.tokenExpiry });
  return { outcomes, latencyMs: merged.latency ?? 0 };
}

/** mulberry32: a tiny, fast 32-bit PRNG; good enough for fault draws and fully reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of the endpoint name, mixed with the seed, so each endpoint has its own stream. */
export function streamSeed(seed: number, endpoint: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < endpoint.length; i++) h = Math.imul(h ^ endpoint.charCodeAt(i), 0x01000193);
  return (h ^ Math.imul(seed >>> 0, 0x9e3779b1)) >>> 0;
}

export interface FaultStats {
  requests: number;
  /** Requests per hub region, where the emulator knows it (queue requests; hub API requests of a tenant with a region). */
  regions: Partial<Record<HubRegion, number>>;
  injected: Record<string, number>;
  /** Latency added, in all (ms). */
  delayedMs: number;
}

/** Draws one decision per request; every request consumes exactly one draw of its endpoint's stream. */
export class FaultInjector {
  /** Per endpoint, and per endpoint in a region (`queue.publish.EU`). */
  private plans = new Map<string, EndpointPlan>();
  private streams = new Map<FaultEndpoint, () => number>();
  private stats = new Map<FaultEndpoint, FaultStats>();
  /** The configuration in force (set by apply). */
  config!: FaultConfig;

  constructor(config: FaultConfig = { seed: DEFAULT_SEED, rules: {} }) {
    this.apply(config);
  }

  /** Replaces the rules and restarts every stream from the (new) seed. */
  apply(config: FaultConfig): void {
    this.config = config;
    for (const endpoint of FAULT_ENDPOINTS) {
      this.plans.set(endpoint, plan(config.rules, endpoint));
      for (const region of HUB_REGIONS) this.plans.set(`${endpoint}.${region}`, plan(config.rules, endpoint, region));
    }
    this.reseed();
  }

  /** Restarts the streams and counters: the same requests then see the same faults again. */
  reseed(): void {
    for (const endpoint of FAULT_ENDPOINTS) {
      this.streams.set(endpoint, mulberry32(streamSeed(this.config.seed, endpoint)));
      this.stats.set(endpoint, { requests: 0, regions: {}, injected: {}, delayedMs: 0 });
    }
  }

  /** `region`: the request's hub region, when known (its region's rule applies). */
  decide(endpoint: FaultEndpoint, region?: string): FaultDecision {
    const regional = (HUB_REGIONS as readonly string[]).includes(region ?? "") ? (region as HubRegion) : undefined;
    const { outcomes, latencyMs } = this.plans.get(regional ? `${endpoint}.${regional}` : endpoint)!;
    const draw = this.streams.get(endpoint)!();
    const stats = this.stats.get(endpoint)!;
    stats.requests++;
    if (regional) stats.regions[regional] = (stats.regions[regional] ?? 0) + 1;
    stats.delayedMs += latencyMs;
    let cumulative = 0;
    for (const outcome of outcomes) {
      cumulative += outcome.rate;
      if (draw < cumulative) {
        const label = outcome.kind === "status" ? String(outcome.status) : outcome.kind;
        stats.injected[label] = (stats.injected[label] ?? 0) + 1;
        return { kind: outcome.kind, status: outcome.status, latencyMs };
      }
    }
    return { latencyMs };
  }

  /** Requests seen and faults injected per endpoint since the last (re)seed. */
  statistics(): Record<FaultEndpoint, FaultStats> {
    return structuredClone(Object.fromEntries(this.stats) as Record<FaultEndpoint, FaultStats>);
  }
}
