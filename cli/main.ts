/** The `hub-export` command: a table of subcommands, each in its own module under cli/commands (cli/README.md). */
import path from "node:path";
import { executeCommand, type Command, type Io } from "./command";
import { EXIT, exitCodeLines } from "./exitCodes";

/** Subcommands and their modules, loaded on demand so that `validate` does not pay for the Pulumi SDK. */
export const COMMANDS: Record<string, string> = {
  validate: "commands/validate",
  render: "commands/render",
  "credentials-string": "commands/credentialsString",
  emulator: "commands/emulator",
  plan: "commands/plan",
  run: "commands/run",
  probe: "commands/probe",
  local: "commands/local",
  status: "commands/status",
  "run-now": "commands/runNow",
  reload: "commands/reload",
  discard: "commands/discard",
  retry: "commands/retry",
  cls: "commands/cls",
  hub: "commands/hub",
  bench: "commands/bench",
};

export type CommandLoader = (name: string) => Promise<Command<any>>;

const requireCommand: CommandLoader = async (name) => (require(path.join(__dirname, COMMANDS[name])) as { default: Command<any> }).default;

async function help(load: CommandLoader): Promise<string> {
  const lines = ["Usage: hub-export <command> [options]", "", "Commands:"];
  for (const name of Object.keys(COMMANDS)) lines.push(`  ${name.padEnd(20)}${(await load(name)).summary}`);
  lines.push("", "Run 'hub-export <command> --help' for a command's options, their defaults and examples.");
  lines.push("", "Exit codes:", ...exitCodeLines({ [EXIT.executionFailed]: "the export run ended ExecutionFailed (run)" }).map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

export async function main(argv: string[], io: Io = process, load: CommandLoader = requireCommand): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? io.stdout : io.stderr).write(await help(load));
    return name ? EXIT.ok : EXIT.usage;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    io.stderr.write(`hub-export: unknown command '${name}': one of ${Object.keys(COMMANDS).join(", ")} (see 'hub-export --help')\n`);
    return EXIT.usage;
  }
  return executeCommand(name, await load(name), rest, io);
}
