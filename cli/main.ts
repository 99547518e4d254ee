/** The `hub-export` command: a table of subcommands, each in its own module under cli/commands. */
import type { Command, Io } from "./command";
import { parseCommandArgs } from "./command";
import { UsageError, isUserError } from "../core/errors";

/** Subcommands, loaded on demand so that `validate` does not pay for the Pulumi SDK. */
const COMMANDS: Record<string, () => Command<any>> = {
  validate: () => require("./commands/validate").default,
  render: () => require("./commands/render").default,
  "credentials-string": () => require("./commands/credentialsString").default,
  emulator: () => require("./commands/emulator").default,
  plan: () => require("./commands/plan").default,
  run: () => require("./commands/run").default,
  local: () => require("./commands/local").default,
  status: () => require("./commands/status").default,
  bench: () => require("./commands/bench").default,
};

function help(): string {
  const lines = ["Usage: hub-export <command> [options]", "", "Commands:"];
  for (const [name, load] of Object.entries(COMMANDS)) {
    let summary: string;
    try {
      summary = load().summary;
    } catch {
      continue; // a command whose module is absent is not offered
    }
    lines.push(`  ${name.padEnd(20)}${summary}`);
  }
  lines.push("", "Run 'hub-export <command> --help' for a command's options.");
  return lines.join("\n") + "\n";
}

export async function main(argv: string[], io: Io = process): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? io.stdout : io.stderr).write(help());
    return name ? 0 : 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    io.stderr.write(`hub-export: unknown command '${name}'\n\n${help()}`);
    return 2;
  }
  const command = load();
  if ((rest.includes("--help") || rest.includes("-h")) && !command.passThrough) {
    io.stdout.write(`${command.summary}\n\nUsage: ${command.usage}\n`);
    return 0;
  }
  try {
    const { values, positionals } = parseCommandArgs(command, rest);
    return await command.run(values, io, positionals);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`hub-export ${name}: ${err.message}\nUsage: ${command.usage}\n`);
      return 2;
    }
    if (isUserError(err)) {
      for (const line of err.lines) io.stderr.write(line + "\n");
      return 1;
    }
    throw err;
  }
}
