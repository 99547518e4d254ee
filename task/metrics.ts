/**
 * The run's CloudWatch metrics, written as embedded-metric-format log lines (core/metrics.ts) on the task's own log:
 * CloudWatch Logs extracts them from the awslogs stream; no client library, no API call, nothing secret in them.
 */
import { runMetricRecords, type MessageCounts, type RunMetricsInput } from "../core/metrics";
import type { TenantConfig } from "./load/configuration";
import type { FinalCounts } from "./warehouse/runState";
import type { Logger } from "./log";

/** A finished run's per-tenant counts, summed per hub region (every region of the run's tenants appears). */
export function countsPerRegion(
  tenants: readonly Pick<TenantConfig, "hubTenantId" | "region">[],
  counts: FinalCounts,
): Record<string, MessageCounts> {
  const regions: Record<string, MessageCounts> = {};
  for (const t of tenants) regions[t.region] ??= { published: 0, failed: 0, heldBack: 0, setAside: 0, ersEntities: 0 };
  for (const [tenantId, c] of Object.entries(counts.tenants)) {
    const region = tenants.find((t) => t.hubTenantId === tenantId)?.region;
    if (!region) continue;
    const r = regions[region];
    r.published += c.published;
    r.failed += c.failed;
    r.ersEntities += c.entities;
  }
  return regions;
}

export function emitRunMetrics(log: Logger, input: Omit<RunMetricsInput, "timestamp">): void {
  for (const record of runMetricRecords({ ...input, timestamp: Date.now() }))
    log.info({ event: "run.metrics", ...record }, `metrics ${String(record.Region)}`);
}
