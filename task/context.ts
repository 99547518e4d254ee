/** What every phase of a run works with. */
import { UserError } from "../core/errors";
import {
  RUN_DEADLINE_ENV,
  SCHEDULE_ENV,
  STOP_GRACE_ENV,
  STOP_GRACE_SECONDS,
  defaultRunDeadlineSeconds,
} from "../core/runDeadline";
import {
  CONCURRENCY_ENV,
  concurrencySchema,
  LINK_APIS,
  type ConcurrencyConfig,
  type LinkApi,
} from "../core/concurrency";
import type { RunConfiguration } from "./load/configuration";
import type { RunState } from "./warehouse/runState";
import type { Logger } from "./log";
import type { Links } from "./http/links";
import { DEFAULT_RETRY, envInt } from "./http/retry";
import type { RetryPolicy } from "../core/retry";
import { DEFAULT_LIMITS, type HttpLimits, type HubHttp } from "./http/client";
import type { RunStop } from "./stop";
import { BREAKER_ENV, type BreakerSettings } from "./http/breaker";
import { DEADLINE_ENV, type Deadline } from "./warehouse/database";

export interface RunSettings {
  /** Extract parts mapped side by side (database sessions). */
  extractWorkers: number;
  /** Employees per extract chunk (one database transaction each). */
  chunkSize: number;
  /** Floors and ceilings of the requests in flight, per API and hub region (stack config `concurrency`). */
  concurrency: ConcurrencyConfig;
  /**
   * Requests in flight in all regions together, pinned by HUB_EXPORT_PUBLISH_CONCURRENCY (queue batches) and
   * HUB_EXPORT_ERS_CONCURRENCY: for tests that bound what a kill leaves in flight, and for pinning a run by hand.
   */
  pinned: Partial<Record<LinkApi, number>>;
  retry: RetryPolicy;
  /** Each hub and broker request's deadline, and the retry budget of its attempts. */
  limits: HttpLimits;
  /** When a link (an API in a hub region) opens: its work stops for the run (task/http/breaker.ts). */
  breaker: BreakerSettings;
  /** The run stops (resumable) this long after it started. */
  runDeadlineSeconds: number;
  /** From SIGTERM (or the run deadline) to the exit at the latest. */
  stopGraceSeconds: number;
  /** Each warehouse statement's deadline, but the extraction's (warehouse/database.ts). */
  warehouseDeadline: Deadline;
  /** Each statement of the extraction (a chunk, the lookup of changed rows): no progress for so long stops the run. */
  extractDeadline: Deadline;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): RunSettings {
  return {
    extractWorkers: Math.min(envInt("HUB_EXPORT_EXTRACT_WORKERS", 2), 4),
    chunkSize: envInt("HUB_EXPORT_CHUNK_SIZE", 5_000),
    concurrency: concurrencyFromEnv(env),
    pinned: pinnedFromEnv(env),
    retry: DEFAULT_RETRY,
    limits: {
      deadlineMs: envSeconds(env, "HUB_EXPORT_REQUEST_DEADLINE_SECONDS", DEFAULT_LIMITS.deadlineMs / 1000) * 1000,
      budgetMs: envSeconds(env, "HUB_EXPORT_RETRY_BUDGET_SECONDS", DEFAULT_LIMITS.budgetMs / 1000) * 1000,
    },
    breaker: breakerFromEnv(env),
    runDeadlineSeconds: envSeconds(env, RUN_DEADLINE_ENV, defaultRunDeadlineSeconds(env[SCHEDULE_ENV])),
    stopGraceSeconds: envSeconds(env, STOP_GRACE_ENV, STOP_GRACE_SECONDS),
    warehouseDeadline: deadlineFromEnv(env, DEADLINE_ENV.statement),
    extractDeadline: deadlineFromEnv(env, DEADLINE_ENV.extract),
  };
}

function deadlineFromEnv(env: NodeJS.ProcessEnv, setting: { name: string; default: number }): Deadline {
  return { seconds: envSeconds(env, setting.name, setting.default), setting: setting.name };
}

/**
 * The longest a warehouse that stops answering holds a run, from the first statement it leaves unanswered: that
 * statement's deadline (the longer one, the extraction's, at worst), then the stop's grace period, in which the run
 * records what it can on fresh sessions and exits.
 */
export function stalledWarehouseSeconds(settings: RunSettings): number {
  return Math.max(settings.warehouseDeadline.seconds, settings.extractDeadline.seconds) + settings.stopGraceSeconds;
}

/** A positive number of seconds (fractions allowed) from the environment, or the fallback when unset. */
export function envSeconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text.trim() === "") return fallback;
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || Number(text) <= 0)
    throw new UserError(`${name} must be a positive number of seconds, got '${text}'`);
  return Number(text);
}

/** The breaker's settings (BREAKER_ENV): whole numbers, the window in seconds (fractions allowed), a percentage of 1 to 100. */
export function breakerFromEnv(env: NodeJS.ProcessEnv): BreakerSettings {
  const whole = ({ name, default: fallback }: { name: string; default: number }, max = Infinity): number => {
    const text = env[name]?.trim();
    if (text === undefined || text === "") return fallback;
    if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > max)
      throw new UserError(
        `${name} must be a whole number from 1${Number.isFinite(max) ? ` to ${max}` : ""}, got '${env[name]}'`,
      );
    return Number(text);
  };
  return {
    failures: whole(BREAKER_ENV.failures),
    windowMs: envSeconds(env, BREAKER_ENV.windowMs.name, BREAKER_ENV.windowMs.default) * 1000,
    rate: whole(BREAKER_ENV.rate, 100) / 100,
    minRequests: whole(BREAKER_ENV.minRequests),
  };
}

/**
 * `HUB_EXPORT_CONCURRENCY` (the stack's `concurrency`, as JSON; the defaults without it), then
 * `HUB_EXPORT_PUBLISH_CONCURRENCY` and `HUB_EXPORT_ERS_CONCURRENCY`: a fixed number of requests in flight (floor =
 * ceiling per region, and at most that many in all: `pinned`).
 */
export function concurrencyFromEnv(env: NodeJS.ProcessEnv): ConcurrencyConfig {
  let raw: unknown;
  const text = env[CONCURRENCY_ENV];
  if (text !== undefined && text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      throw new UserError(
        `${CONCURRENCY_ENV} must be JSON (the stack config 'concurrency'), like {"queue":{"floor":2,"ceiling":64}}`,
      );
    }
  }
  const parsed = concurrencySchema.safeParse(raw);
  if (!parsed.success) {
    throw new UserError(
      parsed.error.issues.map((i) => `${CONCURRENCY_ENV}: ${i.path.join(".") || "(value)"}: ${i.message}`),
    );
  }
  const config = parsed.data;
  for (const [api, n] of Object.entries(pinnedFromEnv(env)) as [LinkApi, number][]) {
    config[api] = { floor: n, ceiling: n };
    for (const region of Object.values(config.regions)) delete region?.[api];
  }
  return config;
}

/** HUB_EXPORT_PUBLISH_CONCURRENCY and HUB_EXPORT_ERS_CONCURRENCY, when set. */
export function pinnedFromEnv(env: NodeJS.ProcessEnv): Partial<Record<LinkApi, number>> {
  const pinned: Partial<Record<LinkApi, number>> = {};
  for (const api of LINK_APIS) {
    const name = { queue: "HUB_EXPORT_PUBLISH_CONCURRENCY", ers: "HUB_EXPORT_ERS_CONCURRENCY" }[api];
    const value = env[name];
    if (value === undefined) continue;
    if (!/^\d+$/.test(value) || Number(value) < 1)
      throw new UserError(`${name} must be a positive integer, got '${value}'`);
    pinned[api] = Number(value);
  }
  return pinned;
}

export interface RunContext {
  config: RunConfiguration;
  run: RunState;
  log: Logger;
  /** Every hub and broker request goes through it: deadlines, answer cap, retry budget, the run's stop. */
  http: HubHttp;
  /** SIGTERM and the run deadline: no new work once requested. */
  stop: RunStop;
  settings: RunSettings;
  /** The adaptive concurrency of each bulk API and region. */
  links: Links;
}
