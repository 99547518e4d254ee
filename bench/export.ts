/**
 * `npm run bench -- --employees N`: N sample employees (default 100,000) through embedded PostgreSQL and the hub
 * emulator (a child process on loopback), exported by the bundled task run with node as a child process, as the
 * image runs it (the node flags of task/Dockerfile). Prints seconds per phase, messages/s, the task's peak RSS,
 * and the floor: the time PostgreSQL alone takes to map every employee to message bodies (the extraction query,
 * nothing written), and total/floor. `--cls report|strict` adds the unknown-code check against the sample data's
 * CLS load sheet (every code known), to measure what the check costs.
 */
import { platTenantsWithHub } from "../core/tenants";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Client, Pool } from "pg";
import { startEmbeddedPostgres } from "../local/embeddedPostgres";
import { emulatorConfig, provisionPlatform, type HubUrls } from "../test/support/platform";
import { SAMPLE_BUSINESS_OBJECTS, seedSampleEmployees } from "../task/model/sampleData";
import { buildLoadSheet } from "../cls/loadSheet";
import { loadSheetCsv } from "../cls/csv";
import { extractChunkSql, extractChunkValues } from "../task/mapping/extractSql";
import { intOption, parseCommandArgs, type Options as CommandOptions } from "../cli/command";
import { UsageError } from "../core/errors";

export const summary = "N sample employees exported by the bundled task through embedded PostgreSQL and the emulator: seconds per phase, messages/s, peak RSS, and the floor";
export const options = {
  employees: { type: "string", value: "N", description: "Sample employees seeded and exported", default: "100000", example: "--employees 1000000" },
  seed: { type: "string", value: "N", description: "Seed of the sample data generator", default: "1", example: "--seed 42" },
  cls: { type: "string", value: "MODE", description: "Adds the unknown-code check (report or strict) against the sample data's CLS load sheet, to measure its cost", example: "--cls report" },
} satisfies CommandOptions;

interface BenchOptions {
  employees: number;
  seed: number;
  cls?: "report" | "strict";
}

function parse(argv: string[]): BenchOptions {
  const { values } = parseCommandArgs({ options }, argv, "bench export");
  const cls = values.cls;
  if (cls !== undefined && cls !== "report" && cls !== "strict") throw new UsageError(`--cls must be report or strict, got '${cls}'`);
  return { employees: intOption("employees", values.employees), seed: intOption("seed", values.seed), cls };
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
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-"));
  const say = (line: string) => process.stdout.write(line + "\n");
  let emulator: ChildProcess | undefined;
  // Its own top-level temporary folder: the server runs as the postgres user, who cannot enter `work`.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-pg-"));
  // BENCH_PG_STATEMENTS=1: the task's statements that took the most time, from pg_stat_statements.
  const statements = process.env.BENCH_PG_STATEMENTS === "1";
  const server = await startEmbeddedPostgres({ dataDir, persistent: false, settings: { ...SERVER_SETTINGS, ...(statements ? { shared_preload_libraries: "pg_stat_statements" } : {}) } });
  try {
    const admin = new Client({ connectionString: server.adminUrl });
    await admin.connect();
    await admin.query("CREATE DATABASE bench");
    await admin.end();
    const url = new URL(server.adminUrl);
    url.pathname = "/bench";

    const configFile = path.join(work, "emulator.json");
    fs.writeFileSync(configFile, JSON.stringify(emulatorConfig({ retainBodies: false })), { mode: 0o600 });
    const started = await startEmulatorProcess(configFile);
    emulator = started.child;
    const platform = await provisionPlatform({ databaseUrl: url.toString(), hub: started.urls, dir: path.join(work, "platform") });

    const pool = new Pool({ connectionString: url.toString(), max: 2 });
    let t = Date.now();
    const seeded = await seedSampleEmployees(pool, { schema: platform.publishSchema, count: options.employees, seed: options.seed });
    const seedSeconds = secs(Date.now() - t);
    const { rows: scope } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${platform.publishSchema}.employee WHERE plat_region IN ('US', 'EU')`);
    await pool.query("CHECKPOINT");

    // The floor: the extraction query over every employee at once, bodies built, nothing written or sent.
    t = Date.now();
    const floorSql = extractChunkSql({ publishSchema: platform.publishSchema, messages: "unused", watermark: `${platform.stagingSchema}.HUB_EXPORT_WATERMARK` }, platform.config.parameters.records_per_hub_message, { insert: false });
    const p = platform.config.parameters;
    const floor = await pool.query<{ messages: number; chars: string }>(`SET work_mem = '256MB'; SET random_page_cost = 1.1;`).then(() =>
      pool.query<{ messages: number; chars: string }>(
        floorSql,
        extractChunkValues({
          transactionId: "00000000-0000-4000-8000-000000000000", clientName: platform.config.clientName, tenantIds: platTenantsWithHub(platform.config).map((x) => x.hub.hubTenantId),
          destinations: platTenantsWithHub(platform.config).map((x) => platform.config.queues[x.hub.hubRegion]!.connectionName), platRegions: platform.config.platTenants.map((x) => x.platRegion),
          idlDate: p.idl_date, upperBound: "2999-01-01T00:00:00", after: "", through: "\u{10FFFF}", seqOffset: 0, systemCode: p.system_code, empTypeDefault: p.EmpTypeDefault, empGenderDefault: p.EmpGenderDefault, createdAt: new Date().toISOString(),
        }),
      ),
    );
    const floorSeconds = secs(Date.now() - t);
    if (statements) await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()");
    await pool.end();

    // The task, bundled and run with node.
    const { buildTask } = require(path.join(ROOT, "scripts", "build-task.js")) as { buildTask(o: { outdir: string }): Promise<{ outfile: string }> };
    const { outfile } = await buildTask({ outdir: path.join(work, "task") });
    // Exactly what the image holds: task/Dockerfile copies index.js alone, without its source map.
    fs.rmSync(`${outfile}.map`, { force: true });
    const clsArgs: string[] = [];
    if (options.cls) {
      const sheet = path.join(work, "CLS_LOAD_SHEET.csv");
      fs.writeFileSync(sheet, loadSheetCsv(buildLoadSheet(SAMPLE_BUSINESS_OBJECTS)));
      clsArgs.push("--cls", sheet, "--cls-mode", options.cls);
    }
    t = Date.now();
    const task = await runAndWatch(outfile, [...platform.args, ...clsArgs]);
    const totalSeconds = secs(Date.now() - t);
    const top = statements ? await topStatements(url.toString()) : [];
    const done = task.events.find((e) => e.event === "run.done") as Record<string, unknown> | undefined;
    if (!done || task.code !== 0) throw new Error(`the task did not complete (exit ${task.code}): ${task.stderr.slice(0, 2000)}`);
    const published = Number(done.published);

    say(`Export benchmark: ${options.employees} employees (${scope[0].n} in the tenants' scope), seed ${options.seed}, ${os.cpus().length} CPUs`);
    say(`  server settings     ${Object.entries(SERVER_SETTINGS).map(([k, v]) => `${k}=${v}`).join(", ")} (embedded PostgreSQL, fsync=off)`);
    say(`  sample data         ${seedSeconds} s (${Object.values(seeded.subEntities).reduce((a, b) => a + b, 0)} sub-entities)`);
    say(`  floor (PostgreSQL)  ${floorSeconds} s: the extraction query alone, ${floor.rows[0].messages} bodies, ${(Number(floor.rows[0].chars) / 1e6).toFixed(0)} MB`);
    say(`  task, end to end    ${totalSeconds} s  (exit ${task.code}, ${String(done.status)})`);
    for (const [phase, s] of Object.entries(done.phases as Record<string, number>)) say(`    ${phase.padEnd(16)}  ${s} s`);
    say(`  messages published  ${published} (${Math.round(published / totalSeconds)} msgs/s end to end)`);
    const cls = task.events.find((e) => e.event === "cls.done");
    if (cls) say(`  CLS check           ${options.cls} mode: ${String(cls.checkedMessages)} messages checked against ${String(cls.sheetRows)} sheet rows, ${String(cls.heldBack)} held back`);
    say(`  task peak RSS       ${task.peakRssMb} MB (VmHWM sampled; the task logged ${String(done.peakRssMb)} MB)`);
    say(`  total / floor       ${(totalSeconds / floorSeconds).toFixed(2)}`);
    for (const line of top) say(line);
  } finally {
    emulator?.kill("SIGTERM");
    await server.stop().catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The statements of the task's database user that took the most time (the seeding and the floor are reset). */
async function topStatements(url: string): Promise<string[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ s: number; calls: string; query: string }>(
      `SELECT round(total_exec_time / 1000) AS s, calls, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
    );
    return ["  top statements (s, calls):", ...rows.map((r) => `    ${String(r.s).padStart(5)} ${String(r.calls).padStart(7)}  ${r.query.slice(0, 150)}`)];
  } finally {
    await client.end();
  }
}

async function startEmulatorProcess(configFile: string): Promise<{ child: ChildProcess; urls: HubUrls }> {
  const child = spawn(process.execPath, [path.join(ROOT, "bin", "hub-export.js"), "emulator", "--port", "0", "--config", configFile, "--json"], { stdio: ["ignore", "pipe", "inherit"] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the emulator exited (${code}) before printing its URLs`)));
  });
  return { child, urls: (JSON.parse(first) as { urls: HubUrls }).urls };
}

/** The node flags of task/Dockerfile's ENTRYPOINT: `["node", <flags>..., "/app/index.js", "run"]`. */
function imageNodeFlags(): string[] {
  const dockerfile = fs.readFileSync(path.join(ROOT, "task", "Dockerfile"), "utf8");
  const entrypoint = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
  if (!entrypoint) throw new Error("task/Dockerfile has no ENTRYPOINT [...] line");
  return (JSON.parse(entrypoint[1]) as string[]).slice(1).filter((a) => a.startsWith("-"));
}

async function runAndWatch(file: string, args: string[]): Promise<{ code: number | null; events: Record<string, unknown>[]; stderr: string; peakRssMb: number }> {
  // The image's node flags, and BENCH_TASK_NODE_ARGS for more (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = [...imageNodeFlags(), ...(process.env.BENCH_TASK_NODE_ARGS ?? "").split(" ").filter(Boolean)];
  const child = spawn(process.execPath, [...nodeArgs, file, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const debug = process.env.BENCH_TASK_LOG ? fs.createWriteStream(process.env.BENCH_TASK_LOG) : undefined;
  child.stdout!.on("data", (c: Buffer) => debug?.write(c));
  const events: Record<string, unknown>[] = [];
  let stderr = "";
  let peakKb = 0;
  const sample = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      // the process is gone
    }
  }, 200);
  readline.createInterface({ input: child.stdout! }).on("line", (line) => {
    try {
      const e = JSON.parse(line) as Record<string, unknown>;
      events.push(e);
      if (e.event === "progress") process.stderr.write(`  .. ${e.phase} ${e.done} (${e.ratePerSecond}/s)\n`);
    } catch {
      // not JSON
    }
  });
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(sample);
  return { code, events, stderr, peakRssMb: Math.round(peakKb / 102.4) / 10 };
}
