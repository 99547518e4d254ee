/**
 * A deployed stack's outputs, for the operator commands: from `pulumi stack output --json --stack NAME` (the Pulumi CLI
 * and its backend login are needed), or from a file holding that command's output (`--outputs FILE`), which is also
 * how a machine without the CLI, or a test, hands them over.
 */
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import { z } from "zod";
import { UserError } from "../core/errors";

/** The stack output `runTask` (components/hubExport.ts): the schedule's own RunTask parameters and the log location. */
const runTaskSchema = z.object({
  region: z.string().min(1),
  cluster: z.string().startsWith("arn:"),
  taskDefinition: z.string().startsWith("arn:"),
  containerName: z.string().min(1),
  subnetIds: z.array(z.string()).min(1),
  securityGroupIds: z.array(z.string()).min(1),
  assignPublicIp: z.boolean(),
  logGroup: z.string().min(1),
  logStreamPrefix: z.string().min(1),
});
export type RunTaskOutputs = z.output<typeof runTaskSchema>;

/** The outputs of `--stack`, or of `--outputs FILE` (the JSON of `pulumi stack output --json`), and where they came from. */
export function readStackOutputs(source: { stack?: string; outputsFile?: string }): {
  outputs: Record<string, unknown>;
  from: string;
} {
  if (source.outputsFile) {
    let text: string;
    try {
      text = fs.readFileSync(source.outputsFile, "utf8");
    } catch (err) {
      throw new UserError(
        `--outputs ${source.outputsFile}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
    return { outputs: parseOutputs(text, `--outputs ${source.outputsFile}`), from: source.outputsFile };
  }
  if (!source.stack)
    throw new UserError(
      "give --stack NAME (uses the Pulumi CLI) or --outputs FILE (the JSON of 'pulumi stack output --json')",
    );
  let text: string;
  try {
    text = execFileSync("pulumi", ["stack", "output", "--json", "--stack", source.stack], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 120_000,
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT")
      throw new UserError(
        `--stack ${source.stack}: the Pulumi CLI is not installed here; give --outputs FILE with the JSON of 'pulumi stack output --json --stack ${source.stack}'`,
      );
    const first = String(e.stderr ?? e.message)
      .trim()
      .split("\n")[0];
    throw new UserError(`pulumi stack output --stack ${source.stack} failed: ${first}`);
  }
  return { outputs: parseOutputs(text, `pulumi stack output --stack ${source.stack}`), from: `stack ${source.stack}` };
}

function parseOutputs(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${what}: not JSON (${(err as Error).message})`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw new UserError(`${what}: expected the JSON object of 'pulumi stack output --json'`);
  return value as Record<string, unknown>;
}

export function runTaskOutputs(outputs: Record<string, unknown>, from: string): RunTaskOutputs {
  if (outputs.runTask === undefined)
    throw new UserError(`${from}: no stack output 'runTask': run 'pulumi up' with this version of the project first`);
  const parsed = runTaskSchema.safeParse(outputs.runTask);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UserError(`${from}: stack output runTask.${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data;
}
