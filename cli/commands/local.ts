import path from "node:path";
import { defineCommand, intOption } from "../command";
import { stackOptions } from "../stackOptions";
import { UsageError } from "../../core/errors";
import { parseFaultSpec } from "../../emulator/faults";
import { asUsage } from "../specOption";
import { formatSummary } from "../../local/summary";
import { interruptedExitCode, LocalInterrupted } from "../../local/interrupt";
import { EXIT, EXIT_MEANINGS } from "../../core/exitCodes";
import { STOP_GRACE_SECONDS } from "../../core/runDeadline";

export default defineCommand({
  summary: "Run the whole system locally: embedded PostgreSQL, the hub emulator, provisioning and one export run",
  options: {
    ...stackOptions,
    employees: {
      type: "string",
      value: "N",
      description: "Sample employees seeded on the first start (a later start changes some instead)",
      default: "1000",
      example: "--employees 100000",
    },
    changes: {
      type: "string",
      value: "N",
      description: "Employees changed before a later start's incremental export",
      default: "50",
      example: "--changes 500",
    },
    "changes-with-unknown-codes": {
      type: "boolean",
      description:
        "The sample changes give job profiles codes the CLS load sheet lacks (SALES_REP_X), to see the unknown-code check report them; by default they use the sheet's codes",
      example: "--changes-with-unknown-codes",
    },
    seed: {
      type: "string",
      value: "N",
      description: "Seed of the sample data generator: the same seed gives the same employees",
      default: "1",
      example: "--seed 42",
    },
    dir: {
      type: "string",
      value: "PATH",
      description: "Where the local state lives (database, bucket, connections, secrets, logs)",
      defaultText: ".local/ in the project",
      example: "--dir /var/tmp/hub-export-demo",
    },
    json: {
      type: "boolean",
      description: "Print the summary as one JSON object on stdout (progress stays on stderr)",
      example: "--json",
    },
    metrics: {
      type: "boolean",
      description: "List the run's CloudWatch metrics in the summary, value by value (--json has them always)",
      example: "--metrics",
    },
    "hub-faults": {
      type: "string",
      value: "SPEC",
      description:
        "Faults the hub emulator injects, as 'hub-export emulator --faults' takes them (its --help), to see how a run meets a flaky or failing hub",
      defaultText: "none",
      example: "--hub-faults 'queue.publish:400=1'",
    },
    keep: {
      type: "boolean",
      description: "Keep the database and the emulator running after the run, until Ctrl-C",
      example: "--keep",
    },
  },
  details: [
    "A second start reuses the state folder and exports only what changed. While one runs with --keep, another 'local' on the same folder is refused with how to stop the first; 'status' joins it.",
    `Ctrl-C (or SIGTERM) stops in order: the export task stops cleanly within its grace period (HUB_EXPORT_STOP_GRACE_SECONDS, ${STOP_GRACE_SECONDS} s), then the emulator and PostgreSQL; the summary says 'Stopped (SIGINT): resumable' with the counts so far, and the next start resumes the run. A second Ctrl-C exits at once, still stopping PostgreSQL.`,
  ],
  examples: [
    {
      command: "npm start",
      does: "the same as 'hub-export local': first start seeds 1,000 employees and exports them",
    },
    {
      command: "npm start -- --keep",
      does: "leaves PostgreSQL and the emulator running to look around (the summary prints their URLs)",
    },
    { command: "rm -rf .local && npm start -- --employees 100000", does: "starts over with a larger sample" },
    {
      command: "npm start -- --hub-faults 'queue.publish:400=1'",
      does: "every publish answered 400: the run ends ExecutionFailed and the summary says why; the next start retries",
    },
  ],
  exitCodes: {
    0: "the export run ended ExecutionCompleted",
    1: "a problem to fix (the message names it), or the export run was refused or stopped (the summary says why; the next start resumes it)",
    [EXIT.executionFailed]:
      "the export run ended ExecutionFailed (the summary's reason says why); the next start retries its failed messages",
    [EXIT.interrupted]: EXIT_MEANINGS[EXIT.interrupted],
  },
  async run(values, io) {
    if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
    // Loaded here, not at the top: it brings the Pulumi SDK, which `hub-export --help` should not wait for.
    const { runLocal } = await import("../../local/run.js");
    const print = (s: Awaited<ReturnType<typeof runLocal>>) =>
      io.stdout.write(values.json ? JSON.stringify(s, null, 2) + "\n" : formatSummary(s, { metrics: values.metrics }));
    const summary = await runLocal({
      stack: values.stack,
      file: values.file,
      employees: intOption("employees", values.employees),
      changes: intOption("changes", values.changes),
      changesWithUnknownCodes: values["changes-with-unknown-codes"] ?? false,
      seed: intOption("seed", values.seed),
      hubFaults:
        values["hub-faults"] === undefined ? {} : asUsage("--hub-faults", () => parseFaultSpec(values["hub-faults"]!)),
      json: values.json ?? false,
      keep: values.keep ?? false,
      root: values.dir ? path.resolve(values.dir) : undefined,
      stdout: io.stdout,
      stderr: io.stderr,
      // --keep shows the summary while the platform runs; otherwise it comes once everything has stopped.
      onSummary: print,
    }).catch((err: unknown) => {
      if (err instanceof LocalInterrupted) return err;
      throw err;
    });
    // Interrupted before the run: the message says so.
    if (summary instanceof LocalInterrupted) {
      io.stderr.write(`${summary.message}\n`);
      return interruptedExitCode(summary.signal);
    }
    if (!values.keep || summary.interrupted) print(summary);
    if (summary.interrupted) return interruptedExitCode(summary.interrupted);
    // The task's documented codes: 3 ExecutionFailed; a stopped, killed or refused run is 1.
    const passedOn: number[] = [EXIT.ok, EXIT.executionFailed];
    return passedOn.includes(summary.exitCode) ? summary.exitCode : EXIT.failed;
  },
});
