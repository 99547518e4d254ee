import { defineCommand, helpText, type Io, type Options } from "../command";
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

const BENCHMARKS = ["export", "emulator", "plan", "outage"];

function load(name: string | undefined): Benchmark {
  if (!name || !BENCHMARKS.includes(name)) {
    throw new UsageError(
      `${name ? `unknown benchmark '${name}'` : "name a benchmark"}: one of ${BENCHMARKS.join(", ")}`,
    );
  }
  // A literal folder with one variable part: the bundler (scripts/build-cli.js) includes every bench/*.ts.
  return require(`../../bench/${name}.ts`) as Benchmark;
}

/** A benchmark's help: its options, as a command's. */
function benchHelp(name: string, io: Io): string {
  const { summary, options } = load(name);
  return `${helpText(`bench ${name}`, { summary, options }, io)}(or: npm run bench${name === "export" ? "" : `:${name}`} -- [options])\n`;
}

export default defineCommand({
  summary: "Run a benchmark script (export, emulator, plan, outage) and print its figures",
  options: {},
  positionals: {
    name: "<benchmark>",
    description: "the benchmark to run (export, emulator, plan, outage); its options follow it",
  },
  passThrough: true,
  // Read when help is shown: each benchmark's options, from its module.
  get details() {
    return BENCHMARKS.map((name) => benchHelp(name, process));
  },
  examples: [
    {
      command: "npm run bench -- --employees 1000000",
      does: "the export of a million employees, with the peak RSS of the task",
    },
  ],
  async run(_values, io, positionals) {
    const [name, ...rest] = positionals;
    const bench = load(name);
    if (rest.includes("--help") || rest.includes("-h")) {
      io.stdout.write(benchHelp(name, io));
      return 0;
    }
    await bench.main(rest);
    return 0;
  },
});
