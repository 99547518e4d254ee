/**
 * The shape of a `hub-export` subcommand. Each command declares its options once — name, type, value placeholder,
 * description, default and example — and both the parser and `--help` are derived from that declaration
 * (cli/README.md: how to add a command).
 */
import { parseArgs } from "node:util";
import { UsageError } from "../core/errors";
import { asUserError } from "../core/refusals";
import { redact, redactLines } from "../core/redact";
import { closest } from "../core/didYouMean";
import { EXIT, exitCodeLines } from "../core/exitCodes";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
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
  /** Positional arguments, for the usage line and help (most commands take none). */
  positionals?: { name: string; description: string };
  /** Hand every argument to `run` unparsed, as positionals (the bench command forwards them). */
  passThrough?: boolean;
  /** More help: paragraphs printed after the options (environment variables, formats). */
  details?: string[];
  /** Whole command lines, each with what it does. */
  examples?: { command: string; does: string }[];
  /** Exit codes beyond 0, 1, 2 and 70 (which every command has), or other meanings for them. */
  exitCodes?: Record<number, string>;
  /** Replaces the generated help (the bench command lists its benchmarks' own options). */
  help?(): Promise<string>;
  /**
   * Actions with options of their own (`cls build`, `cls check`): the first argument names one, which then parses,
   * runs and answers `--help` as a command of its own. `run` is reached only without an action.
   */
  actions?: Record<string, Command>;
  run(values: ParsedValues<O>, io: Io, positionals: string[]): Promise<number>;
}

export type ParsedValues<O extends Options> = {
  [K in keyof O]?: O[K] extends { type: "boolean" } ? boolean : O[K] extends { multiple: true } ? string[] : string;
};

export function defineCommand<O extends Options>(command: Command<O>): Command<O> {
  return command;
}

/** The options as node's parseArgs takes them. Defaults are applied after parsing (so `--x` and its default differ). */
function parserOptions(options: Options) {
  return Object.fromEntries(
    Object.entries(options).map(([name, o]) => [
      name,
      { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
    ]),
  );
}

/**
 * A string option's value that starts with `-` (`--port -1`) is taken as its value when it is no known option, so
 * that the command's own check explains what is expected.
 */
function joinDashValues(options: Options, argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") return [...out, ...argv.slice(i)];
    const spec = arg.startsWith("--") && !arg.includes("=") ? options[arg.slice(2)] : undefined;
    const next = argv[i + 1];
    if (
      spec?.type === "string" &&
      next !== undefined &&
      next.startsWith("-") &&
      next !== "-" &&
      !isKnownOption(options, next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

function isKnownOption(options: Options, arg: string): boolean {
  if (arg.startsWith("--")) return arg.slice(2).split("=")[0] in options || arg === "--help";
  return arg === "-h" || Object.values(options).some((o) => o.short === arg.slice(1));
}

export function parseCommandArgs<O extends Options>(
  command: Pick<Command<O>, "options" | "positionals" | "passThrough">,
  argv: string[],
  name = "command",
): { values: ParsedValues<O>; positionals: string[] } {
  if (command.passThrough) return { values: {}, positionals: argv };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: joinDashValues(command.options, argv),
      options: parserOptions(command.options) as never,
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(parserMessage(err as NodeJS.ErrnoException, command.options, name));
  }
  if (parsed.positionals.length > 0 && !command.positionals)
    throw new UsageError(`unexpected argument '${parsed.positionals[0]}'`);
  const values: Record<string, unknown> = { ...parsed.values };
  for (const [key, spec] of Object.entries(command.options))
    if (values[key] === undefined && spec.default !== undefined) values[key] = spec.default;
  return { values: values as ParsedValues<O>, positionals: parsed.positionals };
}

/** node's parseArgs messages, said our way: one line naming the option and what is expected. */
function parserMessage(err: NodeJS.ErrnoException, options: Options, command: string): string {
  const option = /'(-[^' ]+)/.exec(err.message)?.[1];
  switch (err.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION": {
      const near = option && closest(option.replace(/^-+/, "").split("=")[0], Object.keys(options));
      return `unknown option ${option}${near ? ` (did you mean --${near}?)` : ""}`;
    }
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const name = option?.replace(/^-+/, "").split(/[= ]/)[0] ?? "";
      const spec = options[name];
      if (spec?.type === "boolean") return `--${name} takes no value`;
      return `--${name} needs a value${spec?.value ? ` (${spec.value})` : ""}${spec?.example ? `, e.g. ${spec.example}` : ""}`;
    }
    default:
      return `${err.message.split("\n")[0]} (hub-export ${command} --help lists the options)`;
  }
}

/** Parses a positive integer option, or fails with a usage error naming it. */
export function intOption(name: string, value: string | undefined, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  if (!/^\d+$/.test(value) || Number(value) <= 0)
    throw new UsageError(`--${name} must be a positive integer, got '${value}'`);
  return Number(value);
}

/** `[--employees N]`, `--job-name NAME` */
function synopsisPart(name: string, o: OptionSpec): string {
  const text = `--${name}${o.type === "string" ? ` ${o.value ?? "VALUE"}` : ""}`;
  return o.required ? text : `[${text}]`;
}

export function usageLine(name: string, command: Command): string {
  const parts = Object.entries(command.options).map(([n, o]) => synopsisPart(n, o));
  if (command.positionals) parts.unshift(command.positionals.name);
  return `hub-export ${name} ${parts.join(" ")}`.trimEnd();
}

/** The full `--help` text, from the declaration. */
export async function helpText(name: string, command: Command): Promise<string> {
  if (command.help) return command.help();
  if (command.actions) return actionsHelp(name, command, command.actions);
  const lines = [command.summary, "", `Usage: ${usageLine(name, command)}`];
  if (command.positionals) lines.push("", `${command.positionals.name}: ${command.positionals.description}`);
  lines.push(
    "",
    "Options:",
    ...optionLines(command.options),
    ...optionLines({ help: { type: "boolean", short: "h", description: "Show this help and exit" } }),
  );
  for (const paragraph of command.details ?? []) lines.push("", paragraph);
  if (command.examples?.length) {
    lines.push("", "Examples:");
    for (const e of command.examples) lines.push(`  ${e.command}`, `      ${e.does}`);
  }
  lines.push("", "Exit codes:", ...exitCodeLines(command.exitCodes).map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

function actionsHelp(name: string, command: Command, actions: Record<string, Command>): string {
  const names = Object.keys(actions);
  const lines = [command.summary, "", `Usage: hub-export ${name} <${names.join("|")}> [options]`, "", "Actions:"];
  for (const action of names) lines.push(`  ${action.padEnd(10)}${actions[action].summary}`);
  lines.push("", `Run 'hub-export ${name} <action> --help' for an action's options, their defaults and examples.`);
  lines.push("", "Exit codes:", ...exitCodeLines(command.exitCodes).map((l) => `  ${l}`));
  return lines.join("\n") + "\n";
}

export function optionLines(options: Options): string[] {
  const lines: string[] = [];
  for (const [name, o] of Object.entries(options)) {
    const flag = `${o.short ? `-${o.short}, ` : ""}--${name}${o.type === "string" ? ` ${o.value ?? "VALUE"}` : ""}`;
    lines.push(`  ${flag}`, `      ${o.description}${o.required ? " (required)" : ""}`);
    const facts = [];
    if (o.default !== undefined || o.defaultText) facts.push(`default: ${o.defaultText ?? o.default}`);
    else if (o.type === "boolean" && name !== "help") facts.push("default: off");
    if (o.example) facts.push(`example: ${o.example}`);
    if (facts.length) lines.push(`      ${facts.join("; ")}`);
  }
  return lines;
}

/**
 * Runs one command as the CLI does: `--help` prints its help; a UsageError exits 2 and a UserError 1, each printed
 * as one line (a UserError may list several problems) without a stack trace; so does a foreign state's error
 * (core/refusals.ts). Anything else is a bug, and is thrown.
 */
export async function executeCommand(name: string, command: Command, argv: string[], io: Io): Promise<number> {
  if (command.actions && argv[0] !== undefined && Object.hasOwn(command.actions, argv[0])) {
    return executeCommand(`${name} ${argv[0]}`, command.actions[argv[0]], argv.slice(1), io);
  }
  const help = argv.indexOf("--") === -1 ? argv : argv.slice(0, argv.indexOf("--"));
  if (
    (help.includes("--help") || help.includes("-h")) &&
    (!command.passThrough || help[0] === "--help" || help[0] === "-h" || help.length === 0)
  ) {
    io.stdout.write(await helpText(name, command));
    return EXIT.ok;
  }
  try {
    // `cls --stack qa build`: each action has its own options, so the action is read first.
    const late = command.actions ? help.find((a) => Object.hasOwn(command.actions!, a)) : undefined;
    if (late !== undefined) throw new UsageError(`the action comes first: 'hub-export ${name} ${late} [options]'`);
    const { values, positionals } = parseCommandArgs(command, argv, name);
    return await command.run(values, io, positionals);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`hub-export ${name}: ${redact(err.message)} (see 'hub-export ${name} --help')\n`);
      return EXIT.usage;
    }
    // A user error, or a foreign state's (a full disk, a refused connection, a shared table changed: core/refusals.ts).
    const user = asUserError(err);
    if (user) {
      // A message may quote a hub's answer or an error: shown redacted (core/redact.ts).
      for (const line of user.lines) io.stderr.write(redactLines(line) + "\n");
      return EXIT.failed;
    }
    throw err;
  }
}
