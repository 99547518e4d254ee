/**
 * Floors and ceilings of the task's adaptive concurrency (stack config `concurrency`), per API and hub region. The
 * task's controller (task/http/concurrency.ts) moves each link's window between them. The stack hands the config to
 * the task in one environment variable, as JSON.
 */
import type { HubRegion } from "./regions";

/** The bulk APIs whose concurrency adapts: the queue brokers (publish) and the ERS API. */
export const LINK_APIS = ["queue", "ers"] as const;
export type LinkApi = (typeof LINK_APIS)[number];

export interface LinkBounds {
  floor: number;
  ceiling: number;
}

/** The validated `concurrency` key (config/schema.ts holds its schema and defaults). */
export interface ConcurrencyConfig {
  queue: LinkBounds;
  ers: LinkBounds;
  /** Per region, a partial override of the API's bounds. */
  regions: Partial<Record<HubRegion, Partial<Record<LinkApi, Partial<LinkBounds>>>>>;
}

/** The environment variable that carries `concurrency` to the task, as JSON. */
export const CONCURRENCY_ENV = "HUB_EXPORT_CONCURRENCY";

/** The bounds of one link: the region's override over the API's bounds. */
export function linkBounds(config: ConcurrencyConfig, api: LinkApi, region: HubRegion): LinkBounds {
  return { ...config[api], ...config.regions[region]?.[api] };
}

/** Problems of a config whose merged bounds are inverted, as [key path, message]. */
export function boundsProblems(config: ConcurrencyConfig): [(string | number)[], string][] {
  const problems: [(string | number)[], string][] = [];
  for (const api of LINK_APIS) {
    if (config[api].floor > config[api].ceiling)
      problems.push([[api, "floor"], `must not exceed the ceiling (${config[api].ceiling})`]);
  }
  for (const [region, apis] of Object.entries(config.regions) as [
    HubRegion,
    ConcurrencyConfig["regions"][HubRegion],
  ][]) {
    for (const api of LINK_APIS) {
      if (!apis?.[api]) continue;
      const b = linkBounds(config, api, region);
      if (b.floor > b.ceiling)
        problems.push([["regions", region, api], `floor (${b.floor}) must not exceed the ceiling (${b.ceiling})`]);
    }
  }
  return problems;
}
