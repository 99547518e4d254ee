import path from "node:path";
import fs from "node:fs";
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";

/** Benchmarks live in bench/<name>.ts and export main(argv). They print figures; they never fail on timing. */
export default defineCommand({
  summary: "Run a benchmark script (export, emulator, plan) and print its figures",
  usage: "hub-export bench <export|emulator|plan> [benchmark options]",
  options: {},
  passThrough: true,
  async run(_values, _io, positionals) {
    const [name, ...rest] = positionals;
    const file = name && path.join(__dirname, "..", "..", "bench", `${name}.ts`);
    if (!file || !/^[a-z-]+$/.test(name) || !fs.existsSync(file)) throw new UsageError(`unknown benchmark '${name ?? ""}'`);
    await (require(file) as { main(argv: string[]): Promise<void> }).main(rest);
    return 0;
  },
});
