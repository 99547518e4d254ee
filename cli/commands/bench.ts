import { defineCommand, optionLines, type Options } from "../command";
import { exitCodeLines } from "../../core/exitCodes";
import { UsageError } from "../../core/errors";

/**
 * Benchmarks live in bench/<name>.ts and export `summary`, `options` (declared like a command's) and main(argv).
 * They print figures; they never fail on timing.
 */
interface Benchmark {
  summary: string;
  options: Options;
  main(argv: string[]): Promise<void>;
}

const BENCHMARKS = ["export", "emulator", "plan", "outage"] as const;
const NPM_SCRIPTS: Record<string, string> = {
  export: "npm run bench --",
  emulator: "npm run bench:emulator --",
  plan: "npm run bench:plan --",
  outage: "npm run bench:outage --",
};

async function load(name: string | undefined): Promise<Benchmark> {
  if (!name || !(BENCHMARKS as readonly string[]).includes(name)) {
    throw new UsageError(
      `${name ? `unknown benchmark '${name}'` : "name a benchmark"}: one of ${BENCHMARKS.join(", ")}`,
    );
  }
  // A literal folder with one variable part: the bundler (scripts/build-cli.js) includes every bench/*.ts.
  return require(`../../bench/${name}.ts`) as Benchmark;
}

async function benchHelp(names: readonly string[]): Promise<string> {
  const lines = [
    "Run a benchmark and print its figures (it never fails on timing)",
    "",
    "Usage: hub-export bench <benchmark> [options]",
    "",
    "Benchmarks:",
  ];
  for (const name of names) {
    const bench = await load(name);
    lines.push(
      "",
      `${name}: ${bench.summary}`,
      `  hub-export bench ${name} [options]   (or: ${NPM_SCRIPTS[name]} [options])`,
      ...optionLines(bench.options),
    );
  }
  if (names.includes("export"))
    lines.push(
      "",
      "Examples:",
      "  npm run bench -- --employees 1000000",
      "      the export of a million employees, with the peak RSS of the task",
    );
  lines.push("", "Exit codes:", ...exitCodeLines().map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

export default defineCommand({
  summary: "Run a benchmark script (export, emulator, plan, outage) and print its figures",
  options: {},
  positionals: { name: "<export|emulator|plan|outage>", description: "the benchmark to run; its options follow it" },
  passThrough: true,
  help: () => benchHelp(BENCHMARKS),
  async run(_values, io, positionals) {
    const [name, ...rest] = positionals;
    const bench = await load(name);
    if (rest.includes("--help") || rest.includes("-h")) {
      io.stdout.write(await benchHelp([name]));
      return 0;
    }
    await bench.main(rest);
    return 0;
  },
});
