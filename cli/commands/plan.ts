import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, STACK_USAGE } from "../stackOptions";

/**
 * `hub-export plan`: every resource `pulumi up` would register for a stack, with type, name, parent and inputs,
 * secrets masked. It runs the real program under the Pulumi SDK's mocks: no cloud credentials, no Pulumi CLI.
 */
export default defineCommand({
  summary: "Show every resource 'pulumi up' would register for a stack, offline (secrets masked)",
  usage: `hub-export plan ${STACK_USAGE} [--json]`,
  options: { ...stackOptions, json: { type: "boolean" } },
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
