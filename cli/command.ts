/**
 * The shape of a `hub-export` subcommand, and its commander command: each command declares its options once, and
 * commander parses them, writes `--help` (defaults included) and suggests the option or command meant by a typo. Our
 * exit codes stay: wrong usage 2, a user error 1 without a stack trace (cli/README.md: how to add a command).
 */
import { Command as Commander, CommanderError, Option } from "commander";
import { UsageError } from "../core/errors";
import { asUserError } from "../core/refusals";
import { redact, redactLines, cut } from "../core/redact";
import { EXIT, EXIT_MEANINGS, exitCodeLines } from "../core/exitCodes";

export interface OptionSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  /** The value's placeholder in help: N, PATH, URL, NAME (string options). */
  value?: string;
  /** One line: what the option does. */
  description: string;
  /** The value used when the option is absent: applied by the parser, shown in help. */
  default?: string;
  /** What happens when the option is absent, when that is not one value (shown in help only). */
  defaultText?: string;
  /** How it is used, e.g. `--employees 100000` (shown in help). */
  example?: string;
  /** Shown as required in help; the command still checks it (it may come from the environment). */
  required?: boolean;
}

export type Options = Record<string, OptionSpec>;

export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
}

/** One `hub-export` subcommand. `run` returns the exit code; UserError → 1, UsageError → 2 (handled by executeCommand). */
export interface Command<O extends Options = Options> {
  summary: string;
  options: O;
  /** A positional argument, commander's way (`<benchmark>`), for the usage line and help (most commands take none). */
  positionals?: { name: string; description: string };
  /** Hand every argument after the positional to `run` unparsed (the bench command forwards them). */
  passThrough?: boolean;
  /** More help: paragraphs printed after the options (environment variables, formats). */
  details?: string[];
  /** Whole command lines, each with what it does. */
  examples?: { command: string; does: string }[];
  /** Exit codes beyond 0, 1, 2 and 70 (which every command has), or other meanings for them. */
  exitCodes?: Record<number, string>;
  /** Subcommands with options of their own (`cls build`, `cls check`); such a command has no `run`. */
  actions?: Record<string, Command>;
  run?(values: ParsedValues<O>, io: Io, positionals: string[]): Promise<number>;
}

export type ParsedValues<O extends Options> = {
  [K in keyof O]?: O[K] extends { type: "boolean" } ? boolean : O[K] extends { multiple: true } ? string[] : string;
};

export function defineCommand<O extends Options>(command: Command<O>): Command<O> {
  return command;
}

/** Parses a positive integer option, or fails with a usage error naming it. */
export function intOption(name: string, value: string | undefined): number {
  if (value === undefined) throw new UsageError(`--${name} is required`);
  if (!/^\d+$/.test(value) || Number(value) <= 0)
    throw new UsageError(`--${name} must be a positive integer, got '${cut(value)}'`);
  return Number(value);
}

function toOption(name: string, o: OptionSpec): Option {
  const flags = `--${name}${o.type === "string" ? ` <${o.value ?? "VALUE"}>` : ""}`;
  const facts = [o.required && "required", o.default === undefined && o.defaultText && `default: ${o.defaultText}`];
  if (o.example) facts.push(`example: ${o.example}`);
  const option = new Option(flags, [o.description, ...facts.filter(Boolean).map((f) => `(${f})`)].join(" "));
  if (o.default !== undefined) option.default(o.default, o.defaultText ?? o.default);
  // A repeated option collects its values (`--out a.csv --out a.xlsx`).
  return o.multiple ? option.argParser((value: string, previous?: string[]) => [...(previous ?? []), value]) : option;
}

/** Adds the options to `cmd`; the function returns their parsed values by our names (`database-url`). */
function addOptions(cmd: Commander, options: Options): () => Record<string, unknown> {
  const added = Object.entries(options).map(([name, o]) => [name, toOption(name, o)] as const);
  for (const [, option] of added) cmd.addOption(option);
  // commander reads `--no-retry-after` as retryAfter, true unless given: we keep the option's own sense.
  const value = (option: Option) => cmd.getOptionValue(option.attributeName()) as unknown;
  return () =>
    Object.fromEntries(added.map(([name, option]) => [name, option.negate ? !value(option) : value(option)]));
}

/** commander's message (`error: unknown option '--stak'\n(Did you mean --stack?)`) as one line. */
const oneLine = (message: string) =>
  message
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ")
    .trim();

const usageLine = (path: string, message: string) => `${path}: ${redact(oneLine(message))} (see '${path} --help')\n`;

/** A commander command answering on `io`: its errors one line each, none of them exiting the process. */
function commander(path: string, io: Io): Commander {
  return new Commander(path.split(" ").at(-1)).exitOverride().configureOutput({
    writeOut: (text) => io.stdout.write(text),
    writeErr: (text) => io.stderr.write(text),
    outputError: (message, write) => write(usageLine(path, message)),
  });
}

function helpAfter(command: Pick<Command, "details" | "examples" | "exitCodes">): string {
  const lines: string[] = [];
  for (const paragraph of command.details ?? []) lines.push("", paragraph);
  if (command.examples?.length) {
    lines.push("", "Examples:");
    for (const e of command.examples) lines.push(`  ${e.command}`, `      ${e.does}`);
  }
  lines.push("", "Exit codes:", ...exitCodeLines(command.exitCodes).map((l) => `  ${l}`));
  return lines.join("\n");
}

/** The commander command of a declaration; `done` receives the exit code of the command that ran. */
function toCommander(name: string, command: Command, io: Io, done: (code: number) => void): Commander {
  const path = `hub-export ${name}`;
  const cmd = commander(path, io).description(command.summary);
  const values = addOptions(cmd, command.options);
  if (command.positionals) cmd.argument(command.positionals.name, command.positionals.description);
  if (command.passThrough) cmd.argument("[args...]").allowUnknownOption().passThroughOptions();
  for (const [action, sub] of Object.entries(command.actions ?? {}))
    cmd.addCommand(toCommander(`${name} ${action}`, sub, io, done));
  cmd.addHelpText("after", () => helpAfter(command));
  if (!command.run) return cmd;
  return cmd.action(async () => {
    done(await reported(path, io, () => command.run!(values() as ParsedValues<Options>, io, cmd.args)));
  });
}

/**
 * A UsageError exits 2 and a UserError 1, each printed as one line (a UserError may list several problems) without a
 * stack trace; so does a foreign state's error (core/refusals.ts). Anything else is a bug, and is thrown.
 */
async function reported(path: string, io: Io, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(usageLine(path, err.message));
      return EXIT.usage;
    }
    const user = asUserError(err);
    if (!user) throw err;
    // A message may quote a hub's answer or an error: shown redacted (core/redact.ts).
    for (const line of user.lines) io.stderr.write(redactLines(line) + "\n");
    return EXIT.failed;
  }
}

/** Runs `hub-export <argv>` with these subcommands: commander's own errors and help exit 2 and 0. */
export async function runProgram(commands: Record<string, Command>, argv: string[], io: Io): Promise<number> {
  let code: number = EXIT.ok;
  const program = commander("hub-export", io).enablePositionalOptions();
  for (const [name, command] of Object.entries(commands))
    program.addCommand(toCommander(name, command, io, (c) => (code = c)));
  program.addHelpText("after", () => helpAfter({ exitCodes: EXIT_MEANINGS }));
  try {
    await program.parseAsync(argv, { from: "user" });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    throw err;
  }
}

/** Runs one command as the CLI does (`hub-export <name> <argv>`). */
export function executeCommand(name: string, command: Command, argv: string[], io: Io): Promise<number> {
  return runProgram({ [name]: command }, [name, ...argv], io);
}

/** A benchmark's own options parsed as a command's (bench/*.ts): a mistake is a UsageError. */
export function parseCommandArgs<O extends Options>(options: O, argv: string[]): ParsedValues<O> {
  const cmd = new Commander().exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  const values = addOptions(cmd, options);
  try {
    cmd.parse(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) throw new UsageError(oneLine(err.message));
    throw err;
  }
  return values() as ParsedValues<O>;
}

/** A command's `--help`, as `hub-export <name> --help` prints it (the bench command shows its benchmarks' so). */
export function helpText(name: string, command: Command, io: Io): string {
  return toCommander(name, command, io, () => {})
    .name(`hub-export ${name}`)
    .helpInformation();
}
