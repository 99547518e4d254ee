/** The `hub-export` command: a table of subcommands, each in its own module under cli/commands. */
import { executeCommand, type Command, type Io } from "./command";

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
  "run-now": () => require("./commands/runNow").default,
  reload: () => require("./commands/reload").default,
  cls: () => require("./commands/cls").default,
  hub: () => require("./commands/hub").default,
  bench: () => require("./commands/bench").default,
};

function help(): string {
  const lines = ["Usage: hub-export <command> [options]", "", "Commands:"];
  for (const [name, load] of Object.entries(COMMANDS)) {
    lines.push(`  ${name.padEnd(20)}${load().summary}`);
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
  return executeCommand(name, load(), rest, io);
}
