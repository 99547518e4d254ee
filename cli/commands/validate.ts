import { defineCommand } from "../command";
import { stackOptions, STACK_USAGE, stackSelection } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";
import { inspectStackFile, readStackFileConfig, stackFilePath } from "../../config/load";
import { ALLOWED_ACCOUNTS_KEY, preflightItems } from "../../config/preflight";

export default defineCommand({
  summary: "Validate a stack's configuration (and that its template renders); list what is left to set before 'pulumi up'",
  usage: `hub-export validate ${STACK_USAGE}`,
  options: stackOptions,
  async run(values, io) {
    const selection = stackSelection(values);
    const { config, placeholders, missingSecrets } = inspectStackFile(selection);
    renderTemplate(loadPipelineTemplate(), config);
    const where = values.file ?? `stack ${selection.stack}`;
    io.stdout.write(`ok: ${where}: client ${config.clientName}, ${config.tenants.length} tenant(s) in ${[...new Set(config.tenants.map((t) => t.hubRegion))].join(", ")}\n`);
    const accounts = readStackFileConfig(selection.file ?? stackFilePath(selection.stack!))[ALLOWED_ACCOUNTS_KEY];
    const stack = selection.stack ?? "<stack>";
    const todo = preflightItems({ stack, placeholders, missingSecrets, allowedAccountIds: accounts === undefined ? undefined : JSON.stringify(accounts) });
    if (todo.length > 0) {
      io.stdout.write(`before 'pulumi up': ${todo.length} value${todo.length === 1 ? "" : "s"} to set (pulumi preview and up stop on them):\n`);
      for (const item of todo) io.stdout.write(`  ${item.key}: ${item.problem}: ${item.command}\n`);
    }
    return 0;
  },
});
