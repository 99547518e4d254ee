import path from "node:path";
import { defineCommand, intOption } from "../command";
import { UsageError } from "../../core/errors";
import { runLocal } from "../../local/run";
import { formatSummary } from "../../local/summary";

export default defineCommand({
  summary: "Run the whole system locally: embedded PostgreSQL, the hub emulator, provisioning and one export run",
  usage: "hub-export local [--stack NAME | --file PATH] [--employees N] [--changes N] [--seed N] [--dir PATH] [--json] [--keep]",
  options: {
    stack: { type: "string" },
    file: { type: "string" },
    employees: { type: "string" },
    changes: { type: "string" },
    seed: { type: "string" },
    json: { type: "boolean" },
    keep: { type: "boolean" },
    /** Where the local state lives (default .local/ in the project). */
    dir: { type: "string" },
  },
  async run(values, io) {
    if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
    const print = (s: Awaited<ReturnType<typeof runLocal>>) => io.stdout.write(values.json ? JSON.stringify(s, null, 2) + "\n" : formatSummary(s));
    const summary = await runLocal({
      stack: values.stack,
      file: values.file,
      employees: intOption("employees", values.employees, 1000),
      changes: intOption("changes", values.changes, 50),
      seed: intOption("seed", values.seed, 1),
      json: values.json ?? false,
      keep: values.keep ?? false,
      root: values.dir ? path.resolve(values.dir) : undefined,
      stdout: io.stdout,
      stderr: io.stderr,
      // --keep shows the summary while the platform runs; otherwise it comes once everything has stopped.
      onSummary: print,
    });
    if (!values.keep) print(summary);
    return summary.exitCode === 0 ? 0 : 1;
  },
});
