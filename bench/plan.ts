/**
 * `hub-export bench plan [--tenants 50,100,200] [--target-seconds 10] [--cpu-runs 5]`: how `hub-export plan` scales
 * with the number of tenants. For each size it writes a generated stack file, plans it in this process (timed), and
 * then times the largest as the real command in a fresh node process, output included; then how fast
 * `hub-export --help` answers as a fresh node process (the figure a test once asserted, which a loaded machine
 * failed); last, the CPU seconds of `plan --stack qa`, `validate --stack qa` and `--help`, each a fresh process. It
 * prints figures; it never fails on timing.
 */
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { parseCommandArgs, type Options as CommandOptions } from "../cli/command";
import { planStackFile } from "../components/planner";
import { planJson } from "../components/planner/format";
import { PROJECT_ROOT, stackFilePath } from "../config/load";
import { UsageError } from "../core/errors";
import { writeTenantStackFile } from "./tenants";

const execFileAsync = promisify(execFile);
/** Timed runs of `hub-export --help`, and the median it should stay under (printed, never a failure). */
const HELP_RUNS = 5;
const HELP_TARGET_MS = 900;
/** The commands whose CPU time is printed (docs/developing.md, "Tests and benchmarks"). */
const CPU_COMMANDS = [["plan", "--stack", "qa"], ["validate", "--stack", "qa"], ["--help"]];

interface Row {
  tenants: number;
  resources: number;
  seconds: number;
  jsonBytes: number;
}

export const summary =
  "How 'hub-export plan' scales with the number of tenants: seconds, resources and JSON size per size, then the largest as the real command, and --help";
export const options = {
  tenants: {
    type: "string",
    value: "N,N,...",
    description: "Tenant counts to plan, comma-separated (at least 3 each: one per region)",
    default: "50,100,200",
    example: "--tenants 100,500",
  },
  "target-seconds": {
    type: "string",
    value: "S",
    description: "The time the largest plan should stay under (printed next to the figure, never a failure)",
    default: "10",
    example: "--target-seconds 5",
  },
  "cpu-runs": {
    type: "string",
    value: "N",
    description: "Runs of each command whose CPU seconds are printed (the median and the range)",
    default: "5",
    example: "--cpu-runs 9",
  },
} satisfies CommandOptions;

/**
 * The CPU seconds (user + system, every thread) of `hub-export <args>` as a fresh node process, as it reports them on
 * exit through `preload` (process.cpuUsage); what it starts itself (plan's git) is not counted.
 */
function commandCpuSeconds(preload: string, args: string[]): number {
  const child = spawnSync(
    process.execPath,
    ["--require", preload, path.join(PROJECT_ROOT, "bin/hub-export.js"), ...args],
    {
      cwd: PROJECT_ROOT,
      stdio: ["ignore", "ignore", "pipe", "pipe"],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  if (child.status !== 0)
    throw new Error(`hub-export ${args.join(" ")} exited ${child.status}: ${String(child.stderr).trim()}`);
  const { user, system } = JSON.parse(String(child.output[3])) as NodeJS.CpuUsage;
  return (user + system) / 1e6;
}

export async function main(argv: string[]): Promise<void> {
  const values = parseCommandArgs(options, argv);
  const sizes = values.tenants!.split(",").map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 3))
    throw new UsageError("--tenants must be a comma-separated list of integers of at least 3 (one tenant per region)");
  const target = Number(values["target-seconds"]);
  if (!(target > 0))
    throw new UsageError(`--target-seconds must be a positive number, got '${values["target-seconds"]}'`);
  const cpuRuns = Number(values["cpu-runs"]);
  if (!Number.isInteger(cpuRuns) || cpuRuns < 1)
    throw new UsageError(`--cpu-runs must be a positive integer, got '${values["cpu-runs"]}'`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-plan-"));
  // The repository's prod stack, grown to each size.
  const base = stackFilePath("prod");
  try {
    // A first, small plan loads the SDK and the providers, so that the figures below are the plans themselves.
    await planStackFile({ file: writeTenantStackFile(base, dir, 3) });

    const rows: Row[] = [];
    for (const tenants of sizes) {
      const file = writeTenantStackFile(base, dir, tenants);
      const started = performance.now();
      const run = await planStackFile({ file });
      const json = JSON.stringify(planJson(run));
      rows.push({
        tenants,
        resources: run.resources.length,
        seconds: (performance.now() - started) / 1000,
        jsonBytes: Buffer.byteLength(json),
      });
    }

    const largest = Math.max(...sizes);
    const file = writeTenantStackFile(base, dir, largest);
    const started = performance.now();
    const { stdout } = await execFileAsync(
      process.execPath,
      [path.join(PROJECT_ROOT, "bin/hub-export.js"), "plan", "--file", file, "--json"],
      { cwd: PROJECT_ROOT, maxBuffer: 512 * 1024 * 1024 },
    );
    const commandSeconds = (performance.now() - started) / 1000;
    const commandResources = (JSON.parse(stdout) as { resourceCount: number }).resourceCount;
    // The bundle is built by now (the command above): each --help is node's start, the bundle's load and the text.
    const helpMs: number[] = [];
    for (let i = 0; i < HELP_RUNS; i++) {
      const t = performance.now();
      await execFileAsync(process.execPath, [path.join(PROJECT_ROOT, "bin/hub-export.js"), "--help"], {
        cwd: PROJECT_ROOT,
      });
      helpMs.push(performance.now() - t);
    }
    helpMs.sort((a, b) => a - b);
    const helpMedian = helpMs[Math.floor((HELP_RUNS - 1) / 2)];
    const preload = path.join(dir, "cpu-report.cjs");
    fs.writeFileSync(
      preload,
      'process.on("exit", () => require("node:fs").writeSync(3, JSON.stringify(process.cpuUsage())));\n',
    );
    // Interleaved, so that a change in the machine's load moves every command's figures alike.
    const cpu = CPU_COMMANDS.map(() => [] as number[]);
    for (let i = 0; i < cpuRuns; i++) CPU_COMMANDS.forEach((args, c) => cpu[c].push(commandCpuSeconds(preload, args)));

    const out = process.stdout;
    out.write("hub-export plan: resources and time by number of tenants (in-process, SDK already loaded)\n\n");
    out.write("  tenants  resources  per tenant (marginal)   seconds   ms/resource   JSON MB\n");
    rows.forEach((r, i) => {
      const prev = rows[i - 1];
      const marginal = prev ? ((r.resources - prev.resources) / (r.tenants - prev.tenants)).toFixed(2) : "-";
      out.write(
        `  ${String(r.tenants).padStart(7)}  ${String(r.resources).padStart(9)}  ${marginal.padStart(21)}  ${r.seconds.toFixed(2).padStart(8)}  ${((r.seconds * 1000) / r.resources).toFixed(2).padStart(12)}  ${(r.jsonBytes / 1e6).toFixed(2).padStart(8)}\n`,
      );
    });
    const fixed =
      rows[0].resources -
      rows[0].tenants *
        ((rows.at(-1)!.resources - rows[0].resources) / Math.max(1, rows.at(-1)!.tenants - rows[0].tenants));
    out.write(
      `\n  fixed part: ${fixed.toFixed(0)} resources; each tenant adds its HUB_API_CONFIG rows (3), HUB_PLAT_CONFIG row and routing rule set\n`,
    );
    out.write(
      `\n'hub-export plan --file <${largest} tenants> --json' as a fresh node process (start, SDK load, plan, output): ${commandSeconds.toFixed(2)} s for ${commandResources} resources; target < ${target} s: ${commandSeconds < target ? "met" : "MISSED"}\n`,
    );
    out.write(
      `\n'hub-export --help' as a fresh node process, ${HELP_RUNS} runs: median ${helpMedian.toFixed(0)} ms (fastest ${helpMs[0].toFixed(0)}, slowest ${helpMs.at(-1)!.toFixed(0)}); target < ${HELP_TARGET_MS} ms: ${helpMedian < HELP_TARGET_MS ? "met" : "MISSED"}\n`,
    );
    out.write(`\nCPU seconds (user + system) of 'hub-export' as a fresh node process, ${cpuRuns} runs each:\n`);
    CPU_COMMANDS.forEach((args, c) => {
      const runs = cpu[c].sort((a, b) => a - b);
      const median = runs[Math.floor((runs.length - 1) / 2)];
      out.write(
        `  ${args.join(" ").padEnd(20)} median ${median.toFixed(2)} s (fastest ${runs[0].toFixed(2)}, slowest ${runs.at(-1)!.toFixed(2)})\n`,
      );
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
