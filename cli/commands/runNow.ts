/** `hub-export run-now`: start the export task once, as the schedule does; `--wait` follows it to its exit code. */
import os from "node:os";
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";
import { readStackOutputs, runTaskOutputs } from "../../operate/stackOutputs";
import { EXIT, EXIT_MEANINGS } from "../../core/exitCodes";
import { cut } from "../../core/redact";

function seconds(name: string, value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0)
    throw new UsageError(`--${name} must be a positive number of seconds, got '${cut(value)}'`);
  return Number(value);
}

export default defineCommand({
  summary:
    "Start the export task once now, with the stack's own task definition and network; --wait follows it to its exit code",
  options: {
    stack: {
      type: "string",
      value: "NAME",
      description:
        "The deployed stack: its outputs come from 'pulumi stack output --json --stack NAME' (Pulumi CLI, logged in)",
      example: "--stack qa",
    },
    outputs: {
      type: "string",
      value: "FILE",
      description: "The saved JSON of 'pulumi stack output --json', instead of --stack (no Pulumi CLI needed)",
      example: "--outputs qa-outputs.json",
    },
    wait: {
      type: "boolean",
      description: "Follow the task's log (CloudWatch Logs) to its end and exit with the task's exit code",
      example: "--wait",
    },
    timeout: {
      type: "string",
      value: "SECONDS",
      description: "With --wait: stop following after this long (the task keeps running)",
      defaultText: "no limit",
      example: "--timeout 3600",
    },
    poll: {
      type: "string",
      value: "SECONDS",
      description: "With --wait: seconds between two looks at the task and its log",
      default: "5",
      example: "--poll 10",
    },
  },
  details: [
    "AWS credentials come from the usual AWS variables or profile (ecs:ListTasks, ecs:RunTask, ecs:DescribeTasks, iam:PassRole on the task's two roles, logs:GetLogEvents); the region is the stack's. AWS_ENDPOINT_URL points the SDK elsewhere.",
    "It refuses when a run of the task family is already running: the client's run lock would refuse a second one anyway.",
  ],
  examples: [
    { command: "npx hub-export run-now --stack qa", does: "starts the task, prints its ARN, log group and log stream" },
    {
      command: "npx hub-export run-now --stack qa --wait",
      does: "prints the task's log lines as they come and exits with its exit code",
    },
  ],
  exitCodes: {
    0: "started (with --wait: the run ended ExecutionCompleted)",
    1: "with --wait: the run was refused or stopped, or the task stopped without an exit code; also a problem to fix, named in the message",
    3: "with --wait: the run ended ExecutionFailed",
    70: "with --wait: the task's internal error; or this command's",
    [EXIT.followTimeout]: EXIT_MEANINGS[EXIT.followTimeout],
  },
  async run(values, io) {
    if (values.stack && values.outputs) throw new UsageError("give --stack or --outputs, not both");
    if (!values.stack && !values.outputs) throw new UsageError("give --stack NAME or --outputs FILE");
    if (values.stack !== undefined && !/^[A-Za-z0-9_./-]+$/.test(values.stack))
      throw new UsageError(`--stack must be a stack name, got '${cut(values.stack)}'`);
    const timeout = values.timeout === undefined ? undefined : seconds("timeout", values.timeout);
    const poll = seconds("poll", values.poll ?? "5");
    const { outputs, from } = readStackOutputs({ stack: values.stack, outputsFile: values.outputs });
    const task = runTaskOutputs(outputs, from);
    // Loaded here: the AWS SDK clients are only needed by this command.
    const { runNow } = await import("../../operate/runNow.js");
    const { username } = os.userInfo();
    const user = username.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "operator";
    return runNow({
      task,
      wait: values.wait ?? false,
      startedBy: `hub-export/run-now/${user}`,
      stdout: io.stdout,
      stderr: io.stderr,
      pollMs: poll * 1000,
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    });
  },
});
