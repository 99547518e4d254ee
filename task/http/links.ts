/**
 * The run's links: one adaptive controller (concurrency.ts) per bulk API and hub region, created on first use with the
 * bounds of the stack's `concurrency` config, and one breaker (breaker.ts) per API (queue, ERS, HRSYS) and region.
 * Their figures go into the run's log; the open breakers into its history row, for the next run to probe.
 */
import { linkBounds, type ConcurrencyConfig, type LinkApi } from "../../core/concurrency";
import type { HubRegion } from "../../core/regions";
import { Link, type LinkStats } from "./concurrency";
import { Breaker, type BreakerSettings, type BreakerStats } from "./breaker";

/** The APIs with a breaker: the bulk ones, and the HRSYS intake report. */
export type BreakerApi = LinkApi | "hrsys";

export interface BreakerOptions {
  settings: BreakerSettings;
  /** Called once per link, when it opens (the run logs it). */
  onOpen: (breaker: Breaker) => void;
}

export class Links {
  private readonly links = new Map<string, Link>();
  private readonly breakers = new Map<string, Breaker>();
  private readonly probing = new Set<string>();

  constructor(
    private readonly config: ConcurrencyConfig,
    private readonly breakerOptions: BreakerOptions,
  ) {}

  /** The link of `api` in `region`, e.g. `queue.EU`. */
  get(api: LinkApi, region: HubRegion): Link {
    const name = `${api}.${region}`;
    let link = this.links.get(name);
    if (!link) this.links.set(name, (link = new Link(name, linkBounds(this.config, api, region))));
    return link;
  }

  /** The breaker of `api` in `region`, e.g. `queue.EU`: half open when the last run left it open. */
  breaker(api: BreakerApi, region: HubRegion): Breaker {
    const name = `${api}.${region}`;
    let breaker = this.breakers.get(name);
    if (!breaker) {
      const { settings, onOpen } = this.breakerOptions;
      this.breakers.set(name, (breaker = new Breaker(name, settings, onOpen)));
      if (this.probing.has(name)) breaker.probeFirst();
    }
    return breaker;
  }

  /** Links the last run left open (`queue.EU`): each starts half open, its first request a probe. */
  probeFirst(names: readonly string[]): void {
    for (const name of names) {
      this.probing.add(name);
      this.breakers.get(name)?.probeFirst();
    }
  }

  /** Open links, each with why it opened and its last error: what the run records for the next one. */
  open(): Record<string, string> {
    return Object.fromEntries(
      [...this.breakers.values()].filter((b) => b.state === "open").map((b) => [b.name, b.error().reason]),
    );
  }

  /** Connections one origin may need: every link may share it (the emulator serves all on one port). */
  connectionsPerOrigin(regions: Iterable<HubRegion>): number {
    let n = 0;
    for (const region of new Set(regions))
      n += linkBounds(this.config, "queue", region).ceiling + linkBounds(this.config, "ers", region).ceiling;
    return Math.max(1, n);
  }

  /** Each link's figures, by name. */
  snapshot(): Record<string, LinkStats> {
    return Object.fromEntries([...this.links].map(([name, link]) => [name, link.controller.snapshot()]));
  }

  /** Each breaker's figures, by name (those of links that made requests). */
  breakerSnapshot(): Record<string, BreakerStats> {
    return Object.fromEntries([...this.breakers].map(([name, b]) => [name, b.snapshot()]));
  }
}
