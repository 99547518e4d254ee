/** `hub-export hub checklist`: the hub team's checklist of a stack (core/hubChecklist.ts), as Markdown or JSON. */
import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, stackSelection } from "../stackOptions";
import { checklistMarkdown, hubChecklist } from "../../core/hubChecklist";
import { buildStackSheets } from "../../config/clsSheets";

const checklist = defineCommand({
  summary: "The hub team's checklist of a stack: per hub-side item, what is automated and what a person must do",
  options: {
    ...stackOptions,
    json: { type: "boolean", description: "Print the checklist as JSON instead of Markdown", example: "--json" },
  },
  examples: [
    {
      command: "hub-export hub checklist --stack prod > hub-checklist-prod.md",
      does: "the checklist to hand to the hub team for prod",
    },
  ],
  async run(values, io) {
    const config = loadFromOptions(values);
    // The sheet is built as pulumi up builds it, so the checklist states its size (and the exports are checked).
    const cls = config.cls ? await buildStackSheets(config.cls) : undefined;
    // A --file's stack is read from its name (Pulumi.<stack>.yaml), as every other command reads it.
    const list = hubChecklist(config, stackSelection(values).stack ?? "(file)", { rows: cls?.sheet.rows.length });
    io.stdout.write(values.json ? JSON.stringify(list, null, 2) + "\n" : checklistMarkdown(list));
    return 0;
  },
});

export default defineCommand({
  summary: "The hub team's checklist of a stack (checklist, the only action), as Markdown or JSON",
  options: {},
  actions: { checklist },
});
