/** What every phase of a run works with. */
import type { Dispatcher } from "undici";
import type { RunConfiguration } from "./load/configuration";
import type { RunState } from "./warehouse/runState";
import type { Logger } from "./log";
import { DEFAULT_RETRY, envInt, type RetryPolicy } from "./http/retry";

export interface RunSettings {
  /** Extract parts mapped side by side (database sessions). */
  extractWorkers: number;
  /** Employees per extract chunk (one database transaction each). */
  chunkSize: number;
  /** Batch PUTs in flight to the queues. */
  publishConcurrency: number;
  /** ERS requests in flight. */
  ersConcurrency: number;
  retry: RetryPolicy;
}

export function settingsFromEnv(): RunSettings {
  return {
    extractWorkers: Math.min(envInt("HUB_EXPORT_EXTRACT_WORKERS", 2), 4),
    chunkSize: envInt("HUB_EXPORT_CHUNK_SIZE", 5_000),
    publishConcurrency: envInt("HUB_EXPORT_PUBLISH_CONCURRENCY", 24),
    ersConcurrency: envInt("HUB_EXPORT_ERS_CONCURRENCY", 8),
    retry: DEFAULT_RETRY,
  };
}

export interface RunContext {
  config: RunConfiguration;
  run: RunState;
  log: Logger;
  dispatcher: Dispatcher;
  settings: RunSettings;
}
