/** The hub's regional environments (specification: "US, EU and APAC"). One queue connection exists per region used. */
export const HUB_REGIONS = ["US", "EU", "APAC"] as const;
export type HubRegion = (typeof HUB_REGIONS)[number];

/** Regions in the specification's order, so that every list derived from a set of regions is stable. */
export function sortRegions(regions: Iterable<HubRegion>): HubRegion[] {
  const set = new Set(regions);
  return HUB_REGIONS.filter((r) => set.has(r));
}
