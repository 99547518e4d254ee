/** The `hub-export` command: a table of subcommands, each in its own module under cli/commands (cli/README.md). */
import { runProgram, type Command, type Io } from "./command";
import { loadSdkSerializerLazily } from "./lazySdkModules";

// bin/hub-export.js redacts an internal error's stack with it.
export { redactLines } from "../core/redact";

/** Subcommands and their modules in cli/commands, loaded on demand so that `validate` does not pay for the Pulumi SDK. */
export const COMMANDS: Record<string, string> = {
  validate: "validate",
  render: "render",
  "credentials-string": "credentialsString",
  emulator: "emulator",
  plan: "plan",
  "deployer-policy": "deployerPolicy",
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

// A literal folder with one variable part: the bundler (scripts/build-cli.js) includes every module of cli/commands,
// and initialises only the one imported; vitest imports it in-process.
const importCommand: CommandLoader = async (name) =>
  ((await import(`./commands/${COMMANDS[name]}.ts`)) as { default: Command }).default;

/** Only the command that runs is loaded; help and a mistyped command's suggestion need them all. */
export async function main(argv: string[], io: Io = process, load: CommandLoader = importCommand): Promise<number> {
  loadSdkSerializerLazily();
  const names = Object.hasOwn(COMMANDS, argv[0] ?? "") ? [argv[0]] : Object.keys(COMMANDS);
  const commands = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await load(n)] as const)));
  return runProgram(commands, argv, io);
}
