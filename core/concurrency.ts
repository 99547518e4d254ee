/**
 * Floors and ceilings of the task's adaptive concurrency (stack config `concurrency`), per API and hub region. The
 * task's controller (task/http/concurrency.ts) moves each link's window between them. The stack hands the config to
 * the task in one environment variable, as JSON.
 */
import { z } from "zod";
import { HUB_REGIONS, type HubRegion } from "./regions";

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

/**
 * `concurrency`: floors and ceilings of the requests in flight per API (queue publish, ERS) and hub region; the task
 * adapts between them. The ceiling also bounds the bodies in flight (a queue request holds up to 10 messages, an ERS
 * request records_per_ers_request entities).
 */
export const CONCURRENCY_DEFAULTS = {
  queue: { floor: 2, ceiling: 64 },
  ers: { floor: 1, ceiling: 16 },
  regions: {},
} as const;
const MAX_IN_FLIGHT = 256;
const inFlight = z
  .number()
  .int("must be an integer")
  .min(1, "must be at least 1")
  .max(MAX_IN_FLIGHT, `must be at most ${MAX_IN_FLIGHT}`);
const linkBoundsSchema = z.strictObject({ floor: inFlight, ceiling: inFlight });
const regionBoundsSchema = z.strictObject({
  queue: linkBoundsSchema.partial().optional(),
  ers: linkBoundsSchema.partial().optional(),
});
export const concurrencySchema = z
  .strictObject({
    queue: linkBoundsSchema.partial().optional(),
    ers: linkBoundsSchema.partial().optional(),
    regions: z
      .partialRecord(z.enum(HUB_REGIONS, { error: `must be one of ${HUB_REGIONS.join(", ")}` }), regionBoundsSchema)
      .optional(),
  })
  .transform((c) => ({
    queue: { ...CONCURRENCY_DEFAULTS.queue, ...c.queue },
    ers: { ...CONCURRENCY_DEFAULTS.ers, ...c.ers },
    regions: c.regions ?? {},
  }))
  .superRefine((c, ctx) => {
    for (const [path, message] of boundsProblems(c)) ctx.addIssue({ code: "custom", path, message });
  })
  .prefault({});
