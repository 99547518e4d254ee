/** `hub-export run-now`: start the export task once, as the schedule does; `--wait` follows it to its exit code. */
import os from "node:os";
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";
import { readStackOutputs, runTaskOutputs } from "../../operate/stackOutputs";

function seconds(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0) throw new UsageError(`--${name} must be a positive number of seconds, got '${value}'`);
  return Number(value);
}

export default defineCommand({
  summary: "Start the export task once now, with the stack's own task definition and network; --wait follows it to its exit code",
  usage:
    "hub-export run-now (--stack NAME | --outputs FILE) [--wait] [--timeout SECONDS] [--poll SECONDS]\n" +
    "  --stack NAME    reads the stack's outputs with 'pulumi stack output --json --stack NAME' (Pulumi CLI, logged in)\n" +
    "  --outputs FILE  the JSON of that command, saved (no Pulumi CLI needed)\n" +
    "  AWS credentials come from the usual AWS variables or profile; the region is the stack's\n" +
    "  exit: without --wait 0 once started; with --wait the task's exit code (0 ExecutionCompleted, 1 refused or\n" +
    "  stopped, 3 ExecutionFailed, 70 internal error), 1 if it stopped without one, 124 after --timeout (it keeps running)",
  options: {
    stack: { type: "string" },
    outputs: { type: "string" },
    wait: { type: "boolean" },
    timeout: { type: "string" },
    poll: { type: "string" },
  },
  async run(values, io) {
    if (values.stack && values.outputs) throw new UsageError("give --stack or --outputs, not both");
    if (!values.stack && !values.outputs) throw new UsageError("give --stack NAME or --outputs FILE");
    if (values.stack !== undefined && !/^[A-Za-z0-9_./-]+$/.test(values.stack)) throw new UsageError(`--stack must be a stack name, got '${values.stack}'`);
    const timeout = values.timeout === undefined ? undefined : seconds("timeout", values.timeout, 0);
    const poll = seconds("poll", values.poll, 5);
    const { outputs, from } = readStackOutputs({ stack: values.stack, outputsFile: values.outputs });
    const task = runTaskOutputs(outputs, from);
    // Loaded here: the AWS SDK clients are only needed by this command.
    const { runNow } = require("../../operate/runNow") as typeof import("../../operate/runNow");
    const user = os.userInfo().username.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "operator";
    return runNow({ task, wait: values.wait ?? false, startedBy: `hub-export/run-now/${user}`, stdout: io.stdout, stderr: io.stderr, pollMs: poll * 1000, timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
  },
});
