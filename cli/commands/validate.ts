import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, STACK_USAGE } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";

export default defineCommand({
  summary: "Validate a stack's configuration (and that its template renders)",
  usage: `hub-export validate ${STACK_USAGE}`,
  options: stackOptions,
  async run(values, io) {
    const config = loadFromOptions(values);
    renderTemplate(loadPipelineTemplate(), config);
    io.stdout.write(`ok: ${values.file ?? `stack ${values.stack ?? "qa"}`}: client ${config.clientName}, ${config.tenants.length} tenant(s) in ${[...new Set(config.tenants.map((t) => t.hubRegion))].join(", ")}\n`);
    return 0;
  },
});
