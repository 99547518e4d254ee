import { defineCommand } from "../command";
import { loadFromOptions, stackOptions } from "../stackOptions";

/**
 * `hub-export plan`: every resource `pulumi up` would register for a stack, with type, name, parent and inputs,
 * secrets masked. It runs the real program under the Pulumi SDK's mocks: no cloud credentials, no Pulumi CLI.
 */
export default defineCommand({
  summary: "Show every resource 'pulumi up' would register for a stack, offline (secrets masked)",
  options: {
    ...stackOptions,
    json: { type: "boolean", description: "Print the plan as one JSON document (resources with type, name, parent and inputs)", example: "--json" },
  },
  examples: [{ command: "hub-export plan --stack prod --json > plan.json", does: "every resource and input of prod, secrets masked, for a script or a diff" }],
  async run(values, io) {
    // Validates the stack file first: config problems are reported like `hub-export validate` does.
    loadFromOptions(values);
    // Loaded here, not at the top: `hub-export --help` must not pay for the Pulumi SDK.
    const { planStackFile } = require("../../components/planner") as typeof import("../../components/planner");
    const { planJson, formatPlanText } = require("../../components/planner/format") as typeof import("../../components/planner/format");
    const run = await planStackFile(values.file ? { file: values.file } : { stack: values.stack ?? "qa" });
    io.stdout.write(values.json ? `${JSON.stringify(planJson(run), null, 2)}\n` : formatPlanText(run));
    return 0;
  },
});
