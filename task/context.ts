/** What every phase of a run works with. */
import type { Dispatcher } from "undici";
import { UserError } from "../core/errors";
import { CONCURRENCY_ENV, LINK_APIS, type ConcurrencyConfig, type LinkApi } from "../core/concurrency";
import { concurrencySchema } from "../config/schema";
import type { RunConfiguration } from "./load/configuration";
import type { RunState } from "./warehouse/runState";
import type { Logger } from "./log";
import type { Links } from "./http/links";
import { DEFAULT_RETRY, envInt, type RetryPolicy } from "./http/retry";

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
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): RunSettings {
  return {
    extractWorkers: Math.min(envInt("HUB_EXPORT_EXTRACT_WORKERS", 2), 4),
    chunkSize: envInt("HUB_EXPORT_CHUNK_SIZE", 5_000),
    concurrency: concurrencyFromEnv(env),
    pinned: pinnedFromEnv(env),
    retry: DEFAULT_RETRY,
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
      throw new UserError(`${CONCURRENCY_ENV} must be JSON (the stack config 'concurrency'), like {"queue":{"floor":2,"ceiling":64}}`);
    }
  }
  const parsed = concurrencySchema.safeParse(raw);
  if (!parsed.success) {
    throw new UserError(parsed.error.issues.map((i) => `${CONCURRENCY_ENV}: ${i.path.join(".") || "(value)"}: ${i.message}`));
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
  const fixed = { queue: env.HUB_EXPORT_PUBLISH_CONCURRENCY, ers: env.HUB_EXPORT_ERS_CONCURRENCY };
  for (const api of LINK_APIS) {
    const value = fixed[api];
    if (value === undefined) continue;
    if (!/^\d+$/.test(value) || Number(value) < 1) throw new UserError(`HUB_EXPORT_${api === "queue" ? "PUBLISH" : "ERS"}_CONCURRENCY must be a positive integer, got '${value}'`);
    pinned[api] = Number(value);
  }
  return pinned;
}

export interface RunContext {
  config: RunConfiguration;
  run: RunState;
  log: Logger;
  dispatcher: Dispatcher;
  settings: RunSettings;
  /** The adaptive concurrency of each bulk API and region. */
  links: Links;
}
