/**
 * The docs' tables of settings and defaults hold the code's values: the task's environment variables
 * (task/README.md, "Settings (environment)") as `settingsFromEnv` reads them, and the `hubExport:` keys a stack may
 * leave out (docs/pulumi-reference.md, "Defaults") as the stack config schema fills them in.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { inspectStackFile } from "../../config/load";
import { fixtureStackFile } from "../fixtures/stacks";
import { PROJECT_ROOT } from "../support/cli";
import type { RunSettings } from "../../task/context";

const read = (file: string) => fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");

/** The rows of the first table after `heading`: cells, trimmed. */
function tableAfter(file: string, heading: string): string[][] {
  const text = read(file);
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section '${heading}'`);
  const lines = text.slice(start).split("\n");
  const first = lines.findIndex((l) => l.startsWith("|"));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .slice(1, -1)
        .split(" | ")
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** How each numeric setting is read back from the task's settings, in the unit its variable takes. */
const NUMERIC: Record<string, (s: RunSettings) => number | undefined> = {
  HUB_EXPORT_STOP_GRACE_SECONDS: (s) => s.stopGraceSeconds,
  HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS: (s) => s.warehouseDeadline.seconds,
  HUB_EXPORT_EXTRACT_DEADLINE_SECONDS: (s) => s.extractDeadline.seconds,
  HUB_EXPORT_EXTRACT_WORKERS: (s) => s.extractWorkers,
  HUB_EXPORT_CHUNK_SIZE: (s) => s.chunkSize,
  HUB_EXPORT_RETRY_ATTEMPTS: (s) => s.retry.attempts,
  HUB_EXPORT_RETRY_BASE_MS: (s) => s.retry.baseMs,
  HUB_EXPORT_RETRY_MAX_MS: (s) => s.retry.maxMs,
  HUB_EXPORT_RETRY_BUDGET_SECONDS: (s) => s.limits.budgetMs / 1000,
  HUB_EXPORT_REQUEST_DEADLINE_SECONDS: (s) => s.limits.deadlineMs / 1000,
  HUB_EXPORT_BREAKER_FAILURES: (s) => s.breaker.failures,
  HUB_EXPORT_BREAKER_WINDOW_SECONDS: (s) => s.breaker.windowMs / 1000,
  HUB_EXPORT_BREAKER_MIN_REQUESTS: (s) => s.breaker.minRequests,
  HUB_EXPORT_BREAKER_FAILURE_PERCENT: (s) => Math.round(s.breaker.rate * 100),
  HUB_EXPORT_PUBLISH_CONCURRENCY: (s) => s.pinned.queue,
  HUB_EXPORT_ERS_CONCURRENCY: (s) => s.pinned.ers,
};

/** The task's settings with `env` as its environment, read by a fresh copy of the modules (some read at import). */
async function settingsWith(env: Record<string, string>): Promise<RunSettings> {
  vi.resetModules();
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
  const context = path.join(PROJECT_ROOT, "task", "context.ts");
  const { settingsFromEnv } = (await import(context)) as typeof import("../../task/context");
  return settingsFromEnv({ ...env });
}

afterEach(() => vi.unstubAllEnvs());

describe("task/README.md's settings", () => {
  const rows = tableAfter("task/README.md", "## Settings (environment)").map(([variable, what]) => {
    const names = [...variable.matchAll(/`(HUB_EXPORT_\w+)`/g)].map((m) => m[1]);
    const value = /\(([^()]*(?:\([^)]*\)[^()]*)*)\)$/.exec(variable)?.[1];
    return { names, value, what };
  });

  it("lists the variables with a default each, and none twice", () => {
    expect(rows.length).toBeGreaterThanOrEqual(15);
    const names = rows.flatMap((r) => r.names);
    expect(new Set(names).size).toBe(names.length);
    for (const r of rows) expect(r.value, r.names.join()).toBeDefined();
  });

  it("each numeric default is the code's, and setting the variable changes that setting", async () => {
    const defaults = await settingsWith({});
    let checked = 0;
    for (const { names, value } of rows) {
      for (const name of names.filter((n) => n in NUMERIC)) {
        const documented = value === "none" ? undefined : Number(value);
        expect(NUMERIC[name](defaults), `${name} (${value})`).toBe(documented);
        const other = (documented ?? 0) + 1;
        expect(NUMERIC[name](await settingsWith({ [name]: String(other) })), `${name}=${other}`).toBe(other);
        checked++;
      }
    }
    expect(checked).toBe(Object.keys(NUMERIC).length);
  });

  it("the run deadline is the schedule's period less 120 s; the concurrency the stack's; the log level info", async () => {
    const row = (name: string) => rows.find((r) => r.names.includes(name))!;
    expect(row("HUB_EXPORT_RUN_DEADLINE_SECONDS").value).toBe("the schedule's period less 120 s");
    const daily = await settingsWith({ HUB_EXPORT_SCHEDULE: "cron(0 3 * * ? *)" });
    expect(daily.runDeadlineSeconds).toBe(24 * 3600 - 120);
    const hourly = await settingsWith({ HUB_EXPORT_SCHEDULE: "rate(1 hour)" });
    expect(hourly.runDeadlineSeconds).toBe(3600 - 120);
    expect((await settingsWith({ HUB_EXPORT_RUN_DEADLINE_SECONDS: "7.5" })).runDeadlineSeconds).toBe(7.5);

    expect(row("HUB_EXPORT_CONCURRENCY").value).toBe("the stack's `concurrency`");
    const concurrency = { queue: { floor: 3, ceiling: 5 }, ers: { floor: 1, ceiling: 2 }, regions: {} };
    const set = await settingsWith({ HUB_EXPORT_CONCURRENCY: JSON.stringify(concurrency) });
    expect(set.concurrency).toMatchObject({ queue: concurrency.queue, ers: concurrency.ers });

    expect(row("HUB_EXPORT_LOG_LEVEL").value).toBe("info");
    expect(read("task/log.ts")).toContain('process.env.HUB_EXPORT_LOG_LEVEL ?? "info"');
  });
});

describe("docs/pulumi-reference.md's defaults of the stack config", () => {
  const rows = tableAfter("docs/pulumi-reference.md", "### Defaults").map(([key, value]) => ({
    key: /^`hubExport:([\w.]+)`$/.exec(key)?.[1],
    value: /^`(.*)`$/.exec(value)?.[1],
    row: `${key} | ${value}`,
  }));

  it("are the values the schema gives a stack that leaves the key out", () => {
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const { key, value, row } of rows) {
      expect(key && value, row).toBeTruthy();
      const keyPath = key!.split(".");
      const { config } = inspectStackFile({
        file: fixtureStackFile("qa"),
        stack: "qa",
        override: (raw) => {
          const parent = keyPath.slice(0, -1).reduce<any>((o, k) => o?.[k], raw);
          if (parent) delete parent[keyPath.at(-1)!];
          return raw;
        },
      });
      const actual = keyPath.reduce<any>((o, k) => o?.[k], config);
      expect(actual, row).toEqual(JSON.parse(value!));
    }
  });
});
