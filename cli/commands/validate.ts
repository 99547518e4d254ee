import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, STACK_USAGE } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";
import { environmentIssues } from "../../config/environment";
import { ConfigError, formatIssue } from "../../config/validate";

export default defineCommand({
  summary: "Validate a stack's configuration, that its template renders, and that its values belong to its environment (--strict: mismatches are errors)",
  usage: `hub-export validate ${STACK_USAGE} [--strict]`,
  options: { ...stackOptions, strict: { type: "boolean" } },
  async run(values, io) {
    const config = loadFromOptions(values);
    renderTemplate(loadPipelineTemplate(), config);
    const source = values.file ?? `stack ${values.stack ?? "qa"}`;
    const mismatches = environmentIssues(config);
    if (mismatches.length && values.strict) throw new ConfigError(`${source} (--strict, environment ${config.environment})`, mismatches);
    for (const issue of mismatches) io.stderr.write(`warning: ${formatIssue(issue)}\n`);
    io.stdout.write(
      `ok: ${source}: client ${config.clientName}, ${config.hubTenants.length} hub tenant(s) in ${[...new Set(config.hubTenants.map((t) => t.hubRegion))].join(", ")}, ${config.platTenants.length} platform tenant(s)` +
        (mismatches.length ? `, ${mismatches.length} environment warning(s)` : "") +
        "\n",
    );
    return 0;
  },
});
