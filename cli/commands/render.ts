import fs from "node:fs";
import { defineCommand } from "../command";
import { loadFromOptions, stackOptions } from "../stackOptions";
import { loadPipelineTemplate } from "../../templates";
import { renderTemplate } from "../../core/template";
import { UserError } from "../../core/errors";

export default defineCommand({
  summary: "Print the rendered pipeline definition of a stack",
  options: {
    ...stackOptions,
    out: {
      type: "string",
      value: "PATH",
      description: "Write the definition to this file instead of stdout",
      defaultText: "stdout",
      example: "--out ./definition.json",
    },
  },
  examples: [
    { command: "hub-export render --stack qa", does: "prints the pipeline definition that `pulumi up` uploads for qa" },
  ],
  async run(values, io) {
    const rendered = renderTemplate(loadPipelineTemplate(), loadFromOptions(values));
    if (!values.out) {
      io.stdout.write(rendered.text);
      return 0;
    }
    try {
      fs.writeFileSync(values.out, rendered.text, { mode: 0o644 });
    } catch (err) {
      throw new UserError(
        `--out ${values.out}: cannot write (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
    io.stderr.write(`wrote ${rendered.fileName} to ${values.out}\n`);
    return 0;
  },
});
