/**
 * `npm run bench`: sample employees through embedded PostgreSQL and the emulator (a child process), exported by the
 * bundled task run as the image runs it; prints seconds per phase, messages/s, peak RSS, per-link figures and the floor;
 * with --changes an incremental run's share of the full run's task time, with --cls the check's cost over a run without.
 * BENCH_TASK_BUNDLE=<index.js> runs another build of the task; BENCH_PG_SETTINGS='{...}' adds server settings;
 * BENCH_PG_STATEMENTS=1 lists the slowest statements; BENCH_TASK_NODE_ARGS and BENCH_EMULATOR_NODE_ARGS add node flags.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Client, Pool } from "pg";
import { startBenchPlatform, TENANTS, type TestPlatform } from "./platform";
import {
  SAMPLE_BUSINESS_OBJECTS,
  SAMPLE_LOADER_ROLE,
  seedSampleEmployees,
  touchEmployees,
} from "../task/model/sampleData";
import { PUBLISH_TABLES } from "../task/model/schema";
import { buildLoadSheet } from "../cls/loadSheet";
import { loadSheetCsv } from "../cls/csv";
import { extractChunkSql, extractChunkValues } from "../task/mapping/extractSql";
import { UsageError } from "../core/errors";
import { platTenantsWithHub } from "../core/tenants";
import { clientTables, TABLES } from "../core/naming";
import { parseLatencySpec, parseRateLimitSpec, type LinkState } from "../emulator/link";
import { FaultSpecError } from "../emulator/faults";
import type { LinkStats } from "../task/http/concurrency";
import { intOption, parseCommandArgs, type Options as CommandOptions } from "../cli/command";

export const summary =
  "N sample employees exported by the bundled task through embedded PostgreSQL and the emulator, on loopback or as a remote, rate-limited hub: seconds per phase, messages/s, peak RSS, per link requests, 429s, rates and round trips, and the floor";
export const options = {
  employees: {
    type: "string",
    value: "N",
    description: "Sample employees seeded and exported",
    default: "100000",
    example: "--employees 1000000",
  },
  seed: {
    type: "string",
    value: "N",
    description: "Seed of the sample data generator and of the emulator's latency jitter",
    default: "1",
    example: "--seed 42",
  },
  latency: {
    type: "string",
    value: "SPEC",
    description: "The emulator's round trips per API and region, as `hub-export emulator --latency`",
    defaultText: "none (loopback)",
    example: "--latency 'queue=40ms±10,ers=80ms'",
  },
  "rate-limit": {
    type: "string",
    value: "SPEC",
    description: "The emulator's token-bucket limits per API and region, as `hub-export emulator --rate-limit`",
    defaultText: "none",
    example: "--rate-limit queue=2000/s",
  },
  "no-retry-after": {
    type: "boolean",
    description: "The rate limit's 429s come without Retry-After",
    example: "--no-retry-after",
  },
  cls: {
    type: "string",
    value: "MODE",
    description:
      "Adds the unknown-code check (report or strict) against the sample data's CLS load sheet, then runs the full export four times more (without, with, with, without it), each on a fresh staging state, to print its cost",
    example: "--cls report",
  },
  changes: {
    type: "string",
    value: "M",
    description:
      "After the full run (and a VACUUM, as by the next day), changes M employees (employee rows and sub-entity rows) and runs the incremental export; prints its task time as a share of the full run's",
    defaultText: "none",
    example: "--changes 50",
  },
} satisfies CommandOptions;

function parse(argv: string[]) {
  const values = parseCommandArgs(options, argv);
  const spec = (option: string, value: string | undefined, check: (v: string) => unknown) => {
    try {
      check(value ?? "");
    } catch (err) {
      if (err instanceof FaultSpecError) throw new UsageError(`--${option}: ${err.message}`);
      throw err;
    }
    return value ?? "";
  };
  const cls = values.cls;
  if (cls !== undefined && cls !== "report" && cls !== "strict")
    throw new UsageError(`--cls must be report or strict, got '${cls}'`);
  return {
    employees: intOption("employees", values.employees),
    seed: intOption("seed", values.seed),
    latency: spec("latency", values.latency, parseLatencySpec),
    rateLimit: spec("rate-limit", values["rate-limit"], parseRateLimitSpec),
    retryAfter: !values["no-retry-after"],
    cls,
    ...(values.changes !== undefined ? { changes: intOption("changes", values.changes) } : {}),
  };
}

const ROOT = path.resolve(__dirname, "..");
/**
 * The server's settings beyond the embedded defaults, for the floor and the task alike: a run writes its message
 * bodies (and their archive) into the WAL, and the default max_wal_size (1 GB) would checkpoint every few seconds,
 * each checkpoint making the next change of every page write a full page image again.
 */
const SERVER_SETTINGS = { max_wal_size: "4GB", checkpoint_timeout: "30min" };
const secs = (ms: number) => Math.round(ms / 10) / 100;

export async function main(argv: string[]): Promise<void> {
  const options = parse(argv);
  const say = (line: string) => process.stdout.write(line + "\n");
  // BENCH_PG_STATEMENTS=1: the task's statements that took the most time, from pg_stat_statements.
  const statements = process.env.BENCH_PG_STATEMENTS === "1";
  // BENCH_PG_SETTINGS: more server settings as JSON (e.g. auto_explain's, to see the plan of a slow statement).
  const extra = process.env.BENCH_PG_SETTINGS
    ? (JSON.parse(process.env.BENCH_PG_SETTINGS) as Record<string, string>)
    : {};
  const remote = options.latency !== "" || options.rateLimit !== "";
  const { work, dataDir, url, emulator, platform, taskBundle, close } = await startBenchPlatform({
    settings: {
      ...SERVER_SETTINGS,
      ...(statements ? { shared_preload_libraries: "pg_stat_statements" } : {}),
      ...extra,
    },
    emulatorArgs: [
      "--seed",
      String(options.seed),
      ...(options.latency ? ["--latency", options.latency] : []),
      ...(options.rateLimit ? ["--rate-limit", options.rateLimit] : []),
      ...(options.retryAfter ? [] : ["--no-retry-after"]),
    ],
  });
  try {
    const pool = new Pool({ connectionString: url, max: 2 });
    const t = Date.now();
    const seeded = await seedSampleEmployees(pool, {
      schema: platform.publishSchema,
      loaderRole: SAMPLE_LOADER_ROLE,
      count: options.employees,
      seed: options.seed,
    });
    // Vacuumed as a warehouse's tables are: otherwise autovacuum works through the fresh rows during the first run
    // (and only that one), and a comparison of two runs (--cls) measures it.
    await pool.query(
      `VACUUM (ANALYZE) ${Object.values(PUBLISH_TABLES)
        .map((x) => `${platform.publishSchema}.${x}`)
        .join(", ")}`,
    );
    const seedSeconds = secs(Date.now() - t);
    const { rows: scope } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${platform.publishSchema}.employee WHERE plat_region IN ('US', 'EU')`,
    );
    await pool.query("CHECKPOINT");

    // The floor: the extraction query over every employee at once, bodies built, nothing written or sent.
    const floor = remote ? undefined : await measureFloor(pool, platform);
    if (statements)
      await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()");
    await pool.end();

    const clsArgs: string[] = [];
    if (options.cls) {
      const sheet = path.join(work, "CLS_LOAD_SHEET.csv");
      fs.writeFileSync(sheet, loadSheetCsv(buildLoadSheet(SAMPLE_BUSINESS_OBJECTS)));
      clsArgs.push("--cls", sheet, "--cls-mode", options.cls);
    }
    // The task run as the image runs it: its events, seconds and the CPU seconds of the task, the emulator and the
    // server, or the error it ended with.
    const runTask = async (run: string, args = clsArgs) => {
      const serverCpu = new UserCpu(dataDir).start();
      const emulatorCpu = cpuSeconds(emulator.child.pid);
      const started = Date.now();
      const task = await runAndWatch(taskBundle, [...platform.args, ...args], serverCpu);
      const done = task.events.find((e) => e.event === "run.done");
      if (!done || task.code !== 0)
        throw new Error(`${run} did not complete (exit ${task.code}): ${task.stderr.slice(0, 2000)}`);
      const cpu = {
        task: task.cpuSeconds,
        emulator: cpuSeconds(emulator.child.pid) - emulatorCpu,
        server: serverCpu.seconds,
      };
      return { ...task, seconds: secs(Date.now() - started), done, cpu, taskSeconds: Number(done.seconds) };
    };
    const loadBefore = os.loadavg();
    const task = await runTask("the task");
    const { done, cpu } = task;
    const loadAfter = os.loadavg();
    const top = statements ? await topStatements(url) : [];
    const published = Number(done.published);
    const hub = (await (await fetch(emulator.urls.state)).json()) as {
      links: Record<string, LinkState>;
      ers: Record<string, { entities: number }>;
    };

    say(
      `Export benchmark: ${options.employees} employees (${scope[0].n} in the tenants' scope), seed ${options.seed}, ${os.cpus().length} CPUs`,
    );
    say(
      `  load average        ${loadBefore.map((n) => n.toFixed(2)).join(" ")} before, ${loadAfter.map((n) => n.toFixed(2)).join(" ")} after (1, 5, 15 min)`,
    );
    say(
      `  server settings     ${Object.entries(SERVER_SETTINGS)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")} (embedded PostgreSQL, fsync=off)`,
    );
    say(
      `  hub                 ${remote ? `latency ${options.latency || "none"}; rate limit ${options.rateLimit || "none"}${options.rateLimit ? `, 429 ${options.retryAfter ? "with" : "without"} Retry-After` : ""}` : "loopback"}`,
    );
    if (process.env.BENCH_TASK_BUNDLE) say(`  task bundle         ${process.env.BENCH_TASK_BUNDLE}`);
    say(
      `  sample data         ${seedSeconds} s (${Object.values(seeded.subEntities).reduce((a, b) => a + b, 0)} sub-entities; vacuumed)`,
    );
    if (floor)
      say(
        `  floor (PostgreSQL)  ${floor.seconds} s: the extraction query alone, ${floor.messages} bodies, ${(floor.chars / 1e6).toFixed(0)} MB`,
      );
    say(`  task, end to end    ${task.seconds} s  (exit ${task.code}, ${String(done.status)})`);
    for (const [phase, s] of Object.entries(done.phases as Record<string, number>))
      say(`    ${phase.padEnd(16)}  ${s} s`);
    say(`  messages published  ${published} (${Math.round(published / task.seconds)} msgs/s end to end)`);
    const cls = task.events.find((e) => e.event === "cls.done");
    if (cls)
      say(
        `  CLS check           ${options.cls} mode: ${String(cls.checkedMessages)} messages checked against ${String(cls.sheetRows)} sheet rows, ${String(cls.heldBack)} held back`,
      );
    say(`  task peak RSS       ${task.peakRssMb} MB (VmHWM sampled; the task logged ${String(done.peakRssMb)} MB)`);
    const cores = os.cpus().length;
    say(
      `  CPU seconds         task ${cpu.task.toFixed(1)}, emulator ${cpu.emulator.toFixed(1)}, PostgreSQL ${cpu.server.toFixed(1)}: ${(cpu.task + cpu.emulator + cpu.server).toFixed(1)} of the ${(cores * task.seconds).toFixed(1)} the ${cores} CPUs had`,
    );
    if (floor) say(`  total / floor       ${(task.seconds / floor.seconds).toFixed(2)}`);
    for (const line of linkTable(hub.links, (done.links ?? {}) as Record<string, LinkStats>, hub.ers)) say(line);
    for (const line of top) say(line);
    if (options.changes !== undefined) {
      const touchPool = new Pool({ connectionString: url, max: 1 });
      // The daily run comes a day after the full one, when autovacuum has cleared the work queue the full run
      // emptied: right after it, each statement on the queue scans its dead rows (about 0.2 s a run on a 1M base).
      await touchPool.query("VACUUM (ANALYZE)");
      const touched = await touchEmployees(touchPool, {
        schema: platform.publishSchema,
        count: options.changes,
        seed: options.seed + 1,
      });
      if (statements) await touchPool.query("SELECT pg_stat_statements_reset()");
      await touchPool.end();
      const inc = await runTask("the incremental run");
      const changes = inc.events.find((e) => e.event === "extract.done")?.changes as
        { mode: string; changedRows: number; chunks: number; seconds: number } | undefined;
      const incCls = inc.events.find((e) => e.event === "cls.done");
      const share = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)} %`;
      say(
        `Incremental run: ${touched.length} employees changed (half in the employee row, half only in an address)${options.cls ? `, CLS check ${options.cls} in both runs` : ""}; the database vacuumed first, as autovacuum leaves it by the next day`,
      );
      say(
        `  task, end to end    ${inc.seconds} s  (exit ${inc.code}, ${String(inc.done.status)}); the full run's ${task.seconds} s: ${share(inc.seconds, task.seconds)}`,
      );
      say(
        `  incremental run: ${inc.taskSeconds} s task time = ${share(inc.taskSeconds, task.taskSeconds)} of the full run (${task.taskSeconds} s, run.done)`,
      );
      for (const [phase, s] of Object.entries(inc.done.phases as Record<string, number>))
        say(`    ${phase.padEnd(16)}  ${s} s`);
      if (changes)
        say(
          `  changes             ${changes.mode} mode: ${changes.changedRows} changed rows found in ${changes.seconds} s, ${changes.chunks} chunk statement(s)`,
        );
      say(`  messages published  ${String(inc.done.published)}`);
      if (statements) for (const line of await topStatements(url, "ms")) say(line);
      if (incCls)
        say(
          `  CLS check           ${options.cls} mode: ${String(incCls.checkedMessages)} messages checked, ${String(incCls.heldBack)} held back`,
        );
      say(
        `  task peak RSS       ${inc.peakRssMb} MB; CPU seconds task ${inc.cpuSeconds.toFixed(1)}, PostgreSQL ${inc.cpu.server.toFixed(1)}`,
      );
    }
    if (options.cls) {
      // The same full export without and with the check, in the order without, with, with, without (a drift in the
      // host's load falls on both alike), each from the same starting point: the run's tables emptied, so every
      // employee is changed again. The first run above warmed the emulator and the caches.
      const runs: { check: boolean; run: typeof task }[] = [];
      for (const check of [false, true, true, false]) {
        await freshRunState(url, platform);
        runs.push({
          check,
          run: await runTask(`the run ${check ? "with" : "without"} the CLS check`, check ? clsArgs : []),
        });
      }
      const sum = (check: boolean, figure: (r: typeof task) => number) =>
        runs.filter((r) => r.check === check).reduce((n, r) => n + figure(r.run), 0);
      const over = (figure: (r: typeof task) => number) => {
        const [a, b] = [sum(true, figure), sum(false, figure)];
        return `${a >= b ? "+" : ""}${((100 * (a - b)) / b).toFixed(1)} %`;
      };
      say(
        `CLS check (${options.cls} mode): the full export four times more, without, with, with and without it, each after the run's tables were emptied`,
      );
      for (const { check, run: r } of runs)
        say(
          `  ${(check ? "with the check" : "without the check").padEnd(18)}  task time ${r.taskSeconds} s (run.done); CPU seconds task ${r.cpu.task.toFixed(1)}, emulator ${r.cpu.emulator.toFixed(1)}, PostgreSQL ${r.cpu.server.toFixed(1)}`,
        );
      say(
        `  CLS check: ${over((r) => r.taskSeconds)} over the run without it (task time; CPU seconds of the task and PostgreSQL: ${over((r) => r.cpu.task + r.cpu.server)})`,
      );
    }
  } finally {
    await close();
  }
}

/**
 * The staging state of a platform no run has touched: the client's messages, statuses, held-back rows and watermarks
 * go (the history stays), then a checkpoint, as after seeding, so the next run starts with no dirty pages.
 */
async function freshRunState(url: string, platform: TestPlatform): Promise<void> {
  const staging = platform.stagingSchema;
  const t = clientTables(platform.config.clientName);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const tables = [t.archive, t.status, t.messages, t.rowsHeldBack].map((x) => `${staging}.${x}`).join(", ");
    await client.query(`TRUNCATE ${tables}`);
    await client.query(`DELETE FROM ${staging}.${TABLES.watermark} WHERE plat_client_name = $1`, [
      platform.config.clientName,
    ]);
    await client.query("CHECKPOINT");
  } finally {
    await client.end();
  }
}

/** The extraction query over every employee at once, bodies built, nothing written or sent. */
async function measureFloor(
  pool: Pool,
  platform: TestPlatform,
): Promise<{ seconds: number; messages: number; chars: number }> {
  const t = Date.now();
  const sql = extractChunkSql(
    {
      publishSchema: platform.publishSchema,
      messages: "unused",
      archive: "unused",
      watermark: `${platform.stagingSchema}.HUB_EXPORT_WATERMARK`,
    },
    platform.config.parameters.records_per_hub_message,
    { insert: false },
  );
  const p = platform.config.parameters;
  await pool.query(`SET work_mem = '256MB'; SET random_page_cost = 1.1;`);
  const { rows } = await pool.query<{ messages: number; chars: string }>(
    sql,
    extractChunkValues(
      {
        transactionId: "00000000-0000-4000-8000-000000000000",
        clientName: platform.config.clientName,
        tenantIds: platTenantsWithHub(platform.config).map((x) => x.hub.hubTenantId),
        destinations: platTenantsWithHub(platform.config).map(
          (x) => platform.config.queues[x.hub.hubRegion]!.connectionName,
        ),
        platRegions: platform.config.platTenants.map((x) => x.platRegion),
        idlDate: p.idl_date,
        upperBound: "2999-01-01T00:00:00",
        after: "",
        through: "\u{10FFFF}",
        seqOffset: 0,
        systemCode: p.system_code,
        empTypeDefault: p.EmpTypeDefault,
        empGenderDefault: p.EmpGenderDefault,
        createdAt: new Date().toISOString(),
        final: true,
      },
      p.records_per_hub_message,
    ),
  );
  return { seconds: secs(Date.now() - t), messages: rows[0].messages, chars: Number(rows[0].chars) };
}

/**
 * Per link (API.region) and per API: what the hub saw (requests, 429s, rates, the fraction of its limit) and the
 * round trips the task measured (p50, p99), with the task's window (requests in flight) at the end and its range.
 */
function linkTable(
  hub: Record<string, LinkState>,
  task: Record<string, LinkStats>,
  ers: Record<string, { entities: number }>,
): string[] {
  const names = [
    ...new Set([
      ...Object.keys(hub).filter((n) => n.startsWith("queue.") || n.startsWith("ers.")),
      ...Object.keys(task),
    ]),
  ].sort();
  if (names.length === 0) return [];
  const head = [
    "link",
    "requests",
    "429",
    "429 %",
    "msgs/s",
    "req/s",
    "limit",
    "of limit",
    "p50 ms",
    "p99 ms",
    "window (min-max)",
  ];
  const rows: string[][] = [];
  const noTraffic = { requests: 0, throttled: 0, accepted: 0, seconds: 0, units: 0, limit: 0, limited: false };
  const byApi = new Map<string, typeof noTraffic>();
  for (const name of names) {
    const h = hub[name];
    const c = task[name];
    const [api, region] = name.split(".");
    // Messages per second: queue messages, or ERS entities (the bench's tenants: one per region).
    const tenant = TENANTS[region as keyof typeof TENANTS]?.hubTenantId.toLowerCase() ?? "";
    const units = api === "ers" ? (ers[tenant]?.entities ?? 0) : (h?.accepted ?? 0);
    const msgs = h && h.seconds > 0 ? units / h.seconds : 0;
    rows.push([
      name,
      String(h?.requests ?? c?.requests ?? 0),
      String(h?.throttled ?? c?.throttled ?? 0),
      h && h.requests ? ((100 * h.throttled) / h.requests).toFixed(2) : "-",
      h ? msgs.toFixed(0) : "-",
      h ? h.requestsPerSecond.toFixed(0) : "-",
      h?.limit ? `${h.limit.perSecond} ${h.limit.unit}/s` : "none",
      h?.fractionOfLimit != null ? `${(100 * h.fractionOfLimit).toFixed(1)} %` : "-",
      c ? String(c.rttMs.p50) : "-",
      c ? String(c.rttMs.p99) : "-",
      c ? `${c.window.now} (${c.window.min}-${c.window.max})` : "-",
    ]);
    if (h) {
      const a = byApi.get(api) ?? { ...noTraffic };
      a.requests += h.requests;
      a.throttled += h.throttled;
      a.accepted += h.accepted;
      a.units += units;
      a.seconds = Math.max(a.seconds, h.seconds);
      if (h.limit) {
        a.limit += h.limit.perSecond;
        a.limited = true;
      }
      byApi.set(api, a);
    }
  }
  for (const [api, a] of byApi) {
    const achieved = a.seconds > 0 ? a.accepted / a.seconds : 0;
    rows.push([
      `${api} (all)`,
      String(a.requests),
      String(a.throttled),
      a.requests ? ((100 * a.throttled) / a.requests).toFixed(2) : "-",
      a.seconds > 0 ? (a.units / a.seconds).toFixed(0) : "-",
      a.seconds > 0 ? (a.requests / a.seconds).toFixed(0) : "-",
      a.limited ? String(a.limit) : "none",
      a.limited ? `${((100 * achieved) / a.limit).toFixed(1)} %` : "-",
      "",
      "",
      "",
    ]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    "    " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [
    "  links (hub side: requests, 429s, rates; task side: round trips and window)",
    line(head),
    ...rows.map(line),
  ];
}

/**
 * The statements that took the most time since the last reset (the seeding and the floor are reset), in seconds or,
 * for a short run, milliseconds; then a reset, so that the next run's are its own.
 */
async function topStatements(url: string, unit: "s" | "ms" = "s"): Promise<string[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: number; calls: string; query: string }>(
      `SELECT round(total_exec_time::numeric / $1, 1)::float8 AS t, calls, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
      [unit === "s" ? 1000 : 1],
    );
    await client.query("SELECT pg_stat_statements_reset()");
    return [
      `  top statements (${unit}, calls):`,
      ...rows.map((r) => `    ${String(r.t).padStart(7)} ${String(r.calls).padStart(7)}  ${r.query.slice(0, 150)}`),
    ];
  } finally {
    await client.end();
  }
}

/** The node flags of task/Dockerfile's ENTRYPOINT: `["node", <flags>..., "/app/index.js", "run"]`. */
function imageNodeFlags(): string[] {
  const dockerfile = fs.readFileSync(path.join(ROOT, "task", "Dockerfile"), "utf8");
  const entrypoint = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
  if (!entrypoint) throw new Error("task/Dockerfile has no ENTRYPOINT [...] line");
  return (JSON.parse(entrypoint[1]) as string[]).slice(1).filter((a) => a.startsWith("-"));
}

/** CPU seconds (user + system) a process has used so far, from /proc; 0 once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks (100/s).
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds (user + system) that a process's waited-for children have used, from /proc; 0 once it is gone. */
function childrenCpuSeconds(pid: number): number {
  try {
    // cutime and cstime: the 14th and 15th fields after the command.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds used by the embedded server (every process of the user owning `dataDir`) between start() and stop():
 * the live processes' own time plus what the postmaster's ended children (sessions, autovacuum workers) used, so a
 * process that ends between two readings is counted whole and once.
 */
export class UserCpu {
  private readonly uid: number;
  private readonly postmaster: number;
  private first = 0;
  private last?: number;

  constructor(dataDir: string) {
    this.uid = fs.statSync(dataDir).uid;
    this.postmaster = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  }

  start(): this {
    this.first = this.total();
    return this;
  }

  /** Once the run's client has gone: its sessions end and are reaped first. */
  async stop(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 200));
    this.last = this.total();
  }

  get seconds(): number {
    return (this.last ?? this.total()) - this.first;
  }

  /** The server's CPU seconds so far; read again while a session ends in between (counted twice or not at all). */
  private total(): number {
    for (;;) {
      const ended = childrenCpuSeconds(this.postmaster);
      let live = 0;
      for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          if (fs.statSync(`/proc/${entry}`).uid !== this.uid) continue;
        } catch {
          continue; // the process is gone
        }
        live += cpuSeconds(Number(entry));
      }
      if (childrenCpuSeconds(this.postmaster) === ended) return ended + live;
    }
  }
}

export async function runAndWatch(
  file: string,
  args: string[],
  server: UserCpu,
): Promise<{
  code: number | null;
  events: Record<string, unknown>[];
  stderr: string;
  peakRssMb: number;
  cpuSeconds: number;
}> {
  // The image's node flags, and BENCH_TASK_NODE_ARGS for more (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = [...imageNodeFlags(), ...(process.env.BENCH_TASK_NODE_ARGS ?? "").split(" ").filter(Boolean)];
  const child = spawn(process.execPath, [...nodeArgs, file, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const debug = process.env.BENCH_TASK_LOG ? fs.createWriteStream(process.env.BENCH_TASK_LOG) : undefined;
  child.stdout.on("data", (c: Buffer) => debug?.write(c));
  const events: Record<string, unknown>[] = [];
  let stderr = "";
  let peakKb = 0;
  // The task's CPU seconds, to its last moment: those of our children that ended (it alone ends meanwhile).
  const endedBefore = childrenCpuSeconds(process.pid);
  const sample = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      // the process is gone
    }
  }, 200);
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    try {
      const e = JSON.parse(line) as Record<string, unknown>;
      events.push(e);
      if (e.event === "progress")
        process.stderr.write(`  .. ${String(e.phase)} ${String(e.done)} (${String(e.ratePerSecond)}/s)\n`);
    } catch {
      // not JSON
    }
  });
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(sample);
  const cpu = childrenCpuSeconds(process.pid) - endedBefore;
  await server.stop();
  return { code, events, stderr, peakRssMb: Math.round(peakKb / 102.4) / 10, cpuSeconds: cpu };
}
