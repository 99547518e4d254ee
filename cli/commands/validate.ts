import { defineCommand } from "../command";
import { stackOptions, stackSelection } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";
import { environmentIssues } from "../../config/environment";
import { ConfigError, formatIssue, routingRuleWarnings } from "../../config/validate";
import { inspectStackFile, PROJECT_ROOT } from "../../config/load";
import { checkStackInputs } from "../../config/inputs";
import { readinessItems } from "../../config/preflight";
import { SUPPLIERS, supplierOf, type SupplierId } from "../../config/suppliers";

export default defineCommand({
  summary:
    "Validate a stack's configuration, that its template renders, and that its values belong to its environment (--strict: mismatches are errors); list what is left to set before 'pulumi up', by who usually supplies it",
  options: {
    ...stackOptions,
    strict: {
      type: "boolean",
      description:
        "Treat values that do not belong to the stack's environment (job name suffix, connection and hub environment names, hosts) as errors, not warnings",
      example: "--strict",
    },
  },
  details: [
    "The CLS exports (hubExport:cls.exports) are checked by their files' names, as 'hub-export plan' checks them: the folder holds one export of each business object and no file it cannot use. Their codes are read by 'hub-export cls build --stack' and 'pulumi preview'.",
  ],
  examples: [
    {
      command: "hub-export validate --stack prod",
      does: "checks Pulumi.prod.yaml: every problem at once, one '<key path>: <message>' line each",
    },
    { command: "hub-export validate --stack qa --strict", does: "as CI runs it: environment mismatches fail too" },
    {
      command: "hub-export validate --file ./Pulumi.staging.yaml",
      does: "checks a stack file that is not in the project",
    },
  ],
  exitCodes: {
    0: "the config is valid and its template renders (environment mismatches are printed as warnings; what is left to set before 'pulumi up' is listed on stdout)",
    1: "the config has problems (listed on stderr; with --strict, environment mismatches too)",
  },
  async run(values, io) {
    const selection = stackSelection(values);
    const inspected = inspectStackFile(selection);
    const { config } = inspected;
    renderTemplate(loadPipelineTemplate(), config);
    // A vendor scripts release is read and checked as `pulumi up` reads it, the CLS exports by their files' names.
    const { scriptsRelease: release } = await checkStackInputs(config);
    const source = values.file ?? `stack ${selection.stack}`;
    const mismatches = environmentIssues(config);
    if (mismatches.length && values.strict)
      throw new ConfigError(`${source} (--strict, environment ${config.environment})`, mismatches);
    for (const issue of mismatches) io.stderr.write(`warning: ${formatIssue(issue)}\n`);
    // Routing-rule codes the specification does not list: warnings even with --strict (other data flows use others).
    const routing = routingRuleWarnings(config);
    for (const issue of routing) io.stderr.write(`warning: ${formatIssue(issue)}\n`);
    io.stdout.write(
      `ok: ${source}: client ${config.clientName}, ${config.hubTenants.length} hub tenant(s) in ${[...new Set(config.hubTenants.map((t) => t.hubRegion))].join(", ")}, ${config.platTenants.length} platform tenant(s)` +
        (release ? `, scripts release of ${release.files.length} file(s)` : "") +
        (mismatches.length ? `, ${mismatches.length} environment warning(s)` : "") +
        (routing.length ? `, ${routing.length} routing-rule warning(s)` : "") +
        "\n",
    );
    // Everything a real `pulumi preview` or `up` would stop on, from the preflight's own function (config/preflight.ts).
    const todo = readinessItems({
      stack: selection.stack ?? "<stack>",
      inspected,
      allConfig: inspected.allConfig,
      root: PROJECT_ROOT,
    });
    if (todo.length > 0) {
      // Grouped by who usually supplies each value (config/suppliers.ts): a list to send to each team.
      const values = `${todo.length} value${todo.length === 1 ? "" : "s"}`;
      const by = `by who usually supplies them (docs/pulumi.md, "What you need, and from whom")`;
      io.stdout.write(`before 'pulumi up': ${values} to set (pulumi preview and up stop on them), ${by}:\n`);
      for (const supplier of Object.keys(SUPPLIERS) as SupplierId[]) {
        const items = todo.filter((item) => supplierOf(item.key) === supplier);
        if (!items.length) continue;
        io.stdout.write(`  from ${SUPPLIERS[supplier]} (${items.length}):\n`);
        for (const item of items) io.stdout.write(`    ${item.key}: ${item.problem}: ${item.command}\n`);
      }
    }
    // What no stack value shows: the admin login's rights on the warehouse (docs/pulumi.md, its prerequisites).
    const stack = values.file ? `--file ${values.file}` : `--stack ${selection.stack}`;
    io.stdout.write(
      `then, before 'pulumi up': npx hub-export probe ${stack} --warehouse (what the warehouse's admin login lacks, as the SQL its DBA runs)\n`,
    );
    return 0;
  },
});
