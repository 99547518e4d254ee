import { defineCommand } from "../command";
import { loadFromOptions, stackOptions } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";

export default defineCommand({
  summary: "Validate a stack's configuration (and that its template renders)",
  options: stackOptions,
  examples: [
    { command: "hub-export validate --stack prod", does: "checks Pulumi.prod.yaml: every problem at once, one '<key path>: <message>' line each" },
    { command: "hub-export validate --file ./Pulumi.staging.yaml", does: "checks a stack file that is not in the project" },
  ],
  exitCodes: { 0: "the config is valid and its template renders", 1: "the config has problems (listed on stderr)" },
  async run(values, io) {
    const config = loadFromOptions(values);
    renderTemplate(loadPipelineTemplate(), config);
    io.stdout.write(`ok: ${values.file ?? `stack ${values.stack ?? "qa"}`}: client ${config.clientName}, ${config.tenants.length} tenant(s) in ${[...new Set(config.tenants.map((t) => t.hubRegion))].join(", ")}\n`);
    return 0;
  },
});
