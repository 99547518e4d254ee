/**
 * The run's links: one adaptive controller (concurrency.ts) per bulk API and hub region, created on first use with the
 * bounds of the stack's `concurrency` config. Their figures go into the run's log.
 */
import { linkBounds, type ConcurrencyConfig, type LinkApi } from "../../core/concurrency";
import type { HubRegion } from "../../core/regions";
import { Link, type LinkStats, type Tuning } from "./concurrency";

export class Links {
  private readonly links = new Map<string, Link>();

  constructor(
    private readonly config: ConcurrencyConfig,
    private readonly tuning: Partial<Tuning> = {},
  ) {}

  /** The link of `api` in `region`, e.g. `queue.EU`. */
  get(api: LinkApi, region: HubRegion): Link {
    const name = `${api}.${region}`;
    let link = this.links.get(name);
    if (!link) this.links.set(name, (link = new Link(name, linkBounds(this.config, api, region), this.tuning)));
    return link;
  }

  /** Connections one origin may need: every link may share it (the emulator serves all on one port). */
  connectionsPerOrigin(regions: Iterable<HubRegion>): number {
    let n = 0;
    for (const region of new Set(regions)) n += linkBounds(this.config, "queue", region).ceiling + linkBounds(this.config, "ers", region).ceiling;
    return Math.max(1, n);
  }

  /** Each link's figures, by name. */
  snapshot(): Record<string, LinkStats> {
    return Object.fromEntries([...this.links].map(([name, link]) => [name, link.controller.snapshot()]));
  }
}
