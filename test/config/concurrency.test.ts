import { describe, expect, it } from "vitest";
import { validateStackConfig, ConfigError } from "../../config/validate";
import { CONCURRENCY_DEFAULTS } from "../../core/concurrency";
import { linkBounds } from "../../core/concurrency";
import { rawConfig } from "../support/rawConfig";

function problems(concurrency: unknown): string[] {
  const raw = { ...rawConfig(), concurrency };
  try {
    validateStackConfig(raw, { source: "test" });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).lines.slice(1);
  }
  return [];
}

describe("stack config: concurrency", () => {
  it("has defaults for every API when the key is absent", () => {
    const config = validateStackConfig(rawConfig(), { source: "test" });
    expect(config.concurrency).toEqual({
      queue: { floor: 2, ceiling: 64 },
      ers: { floor: 1, ceiling: 16 },
      regions: {},
    });
    expect(config.concurrency.queue).toEqual(CONCURRENCY_DEFAULTS.queue);
  });

  it("takes floors and ceilings per API, and per region over them", () => {
    const config = validateStackConfig(
      {
        ...rawConfig(),
        concurrency: {
          queue: { ceiling: 32 },
          regions: { APAC: { queue: { floor: 1, ceiling: 8 } }, EU: { ers: { ceiling: 4 } } },
        },
      },
      { source: "test" },
    );
    expect(linkBounds(config.concurrency, "queue", "US")).toEqual({ floor: 2, ceiling: 32 });
    expect(linkBounds(config.concurrency, "queue", "APAC")).toEqual({ floor: 1, ceiling: 8 });
    expect(linkBounds(config.concurrency, "ers", "EU")).toEqual({ floor: 1, ceiling: 4 });
    expect(linkBounds(config.concurrency, "ers", "US")).toEqual({ floor: 1, ceiling: 16 });
  });

  it("refuses bad bounds, one line each with the key path", () => {
    expect(problems({ queue: { floor: 0 }, ers: { ceiling: 1000 } })).toEqual([
      "hubExport:concurrency.queue.floor: must be at least 1",
      "hubExport:concurrency.ers.ceiling: must be at most 256",
    ]);
    expect(problems({ queue: { floor: 10, ceiling: 5 } })).toEqual([
      "hubExport:concurrency.queue.floor: must not exceed the ceiling (5)",
    ]);
    expect(problems({ regions: { EU: { queue: { floor: 80 } } } })).toEqual([
      "hubExport:concurrency.regions.EU.queue: floor (80) must not exceed the ceiling (64)",
    ]);
    expect(problems({ regions: { MARS: {} } })).toEqual(["hubExport:concurrency.regions.MARS: is not a known key"]);
    expect(problems({ queue: { ceiling: 2.5 }, publish: {} })).toEqual([
      "hubExport:concurrency.queue.ceiling: must be an integer",
      "hubExport:concurrency.publish: is not a known key",
    ]);
  });
});
