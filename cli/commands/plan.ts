import fs from "node:fs";
import { defineCommand } from "../command";
import { loadFromOptions, stackOptions } from "../stackOptions";
import { UserError } from "../../core/errors";
import type { PlanJson } from "../../components/planner/format";

/** An earlier `plan --json`, checked enough to diff against. */
function readPlanJson(file: string): PlanJson {
  let plan: PlanJson;
  try {
    plan = JSON.parse(fs.readFileSync(file, "utf8")) as PlanJson;
  } catch (err) {
    throw new UserError(`--diff-from ${file}: cannot read a plan (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give the output of 'hub-export plan --json'`);
  }
  if (!Array.isArray(plan?.resources)) throw new UserError(`--diff-from ${file}: not the output of 'hub-export plan --json' (no resources)`);
  return plan;
}

/**
 * `hub-export plan`: every resource `pulumi up` would register for a stack, with type, name, parent and inputs,
 * secrets masked. It runs the real program under the Pulumi SDK's mocks: no cloud credentials, no Pulumi CLI.
 */
export default defineCommand({
  summary: "Show every resource 'pulumi up' would register for a stack, offline (secrets masked)",
  options: {
    ...stackOptions,
    json: { type: "boolean", description: "Print the plan as one JSON document (resources with type, name, parent and inputs)", example: "--json" },
    "diff-from": {
      type: "string",
      value: "PATH",
      description: "Print only what changed since an earlier plan, the --json output of another checkout (what CI comments on a pull request), as Markdown",
      example: "--diff-from plan-main.json",
    },
  },
  examples: [
    { command: "hub-export plan --stack prod --json > plan.json", does: "every resource and input of prod, secrets masked, for a script or a diff" },
    { command: "hub-export plan --stack qa --diff-from plan-main-qa.json", does: "the resources this checkout adds, changes and deletes in qa compared with main's plan" },
  ],
  async run(values, io) {
    // Validates the stack file first: config problems are reported like `hub-export validate` does.
    loadFromOptions(values);
    // Loaded here, not at the top: `hub-export --help` must not pay for the Pulumi SDK.
    const { planStackFile } = require("../../components/planner") as typeof import("../../components/planner");
    const { planJson, formatPlanText, formatPlanDiff } = require("../../components/planner/format") as typeof import("../../components/planner/format");
    const before = values["diff-from"] === undefined ? undefined : readPlanJson(values["diff-from"]);
    const run = await planStackFile(values.file ? { file: values.file } : { stack: values.stack ?? "qa" });
    io.stdout.write(before ? formatPlanDiff(before, planJson(run)) : values.json ? `${JSON.stringify(planJson(run), null, 2)}\n` : formatPlanText(run));
    return 0;
  },
});
