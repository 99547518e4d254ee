/** `hub-export hub checklist`: the hub team's checklist of a stack (core/hubChecklist.ts), as Markdown or JSON. */
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";
import { loadFromOptions, stackOptions, STACK_USAGE } from "../stackOptions";
import { checklistMarkdown, hubChecklist } from "../../core/hubChecklist";
import { buildStackSheets } from "../../cls/stack";

export default defineCommand({
  summary: "The hub team's checklist of a stack: per hub-side item, what is automated and what a person must do",
  usage: `hub-export hub checklist ${STACK_USAGE} [--json]`,
  positionals: true,
  options: { ...stackOptions, json: { type: "boolean" } },
  async run(values, io, positionals) {
    if (positionals[0] !== "checklist" || positionals.length > 1) throw new UsageError(positionals[0] && positionals[0] !== "checklist" ? `unknown action '${positionals[0]}': checklist` : "checklist is required");
    const config = loadFromOptions(values);
    // The sheet is built as pulumi up builds it, so the checklist states its size (and the exports are checked).
    const cls = config.cls ? await buildStackSheets(config.cls) : undefined;
    const list = hubChecklist(config, values.stack ?? (values.file ? "(file)" : "qa"), { rows: cls?.sheet.rows.length });
    io.stdout.write(values.json ? JSON.stringify(list, null, 2) + "\n" : checklistMarkdown(list));
    return 0;
  },
});
