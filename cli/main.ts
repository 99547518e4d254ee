/** The `hub-export` command: a table of subcommands, each in its own module under cli/commands (cli/README.md). */
import { executeCommand, type Command, type Io } from "./command";
import { EXIT, EXIT_MEANINGS, exitCodeLines } from "../core/exitCodes";
import { closest } from "../core/didYouMean";

// bin/hub-export.js redacts an internal error's stack with it.
export { redactLines } from "../core/redact";

/** Subcommands and their modules in cli/commands, loaded on demand so that `validate` does not pay for the Pulumi SDK. */
export const COMMANDS: Record<string, string> = {
  validate: "validate",
  render: "render",
  "credentials-string": "credentialsString",
  emulator: "emulator",
  plan: "plan",
  run: "run",
  probe: "probe",
  local: "local",
  status: "status",
  "run-now": "runNow",
  reload: "reload",
  discard: "discard",
  retry: "retry",
  cls: "cls",
  hub: "hub",
  bench: "bench",
};

export type CommandLoader = (name: string) => Promise<Command>;

// A literal folder with one variable part: the bundler (scripts/build-cli.js) includes every module of cli/commands.
const requireCommand: CommandLoader = async (name) =>
  (require(`./commands/${COMMANDS[name]}.ts`) as { default: Command }).default;

async function help(load: CommandLoader): Promise<string> {
  const lines = ["Usage: hub-export <command> [options]", "", "Commands:"];
  for (const name of Object.keys(COMMANDS)) lines.push(`  ${name.padEnd(20)}${(await load(name)).summary}`);
  lines.push("", "Run 'hub-export <command> --help' for a command's options, their defaults and examples.");
  lines.push("", "Exit codes:", ...exitCodeLines(EXIT_MEANINGS).map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

export async function main(argv: string[], io: Io = process, load: CommandLoader = requireCommand): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? io.stdout : io.stderr).write(await help(load));
    return name ? EXIT.ok : EXIT.usage;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    const near = closest(name, Object.keys(COMMANDS));
    io.stderr.write(
      `hub-export: unknown command '${name}'${near ? ` (did you mean '${near}'?)` : ""}: one of ${Object.keys(COMMANDS).join(", ")} (see 'hub-export --help')\n`,
    );
    return EXIT.usage;
  }
  return executeCommand(name, await load(name), rest, io);
}
