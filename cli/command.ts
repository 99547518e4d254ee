import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError, isUserError } from "../core/errors";

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
}

/** One `hub-export` subcommand. `run` returns the exit code; UserError → 1, UsageError → 2 (handled by main). */
export interface Command<O extends Options = Options> {
  summary: string;
  usage: string;
  options: O;
  /** Accept positional arguments (most commands take none). */
  positionals?: boolean;
  /** Hand every argument to `run` unparsed, as positionals (the bench command forwards them). */
  passThrough?: boolean;
  run(values: ParsedValues<O>, io: Io, positionals: string[]): Promise<number>;
}

export type ParsedValues<O extends Options> = {
  [K in keyof O]?: O[K] extends { type: "boolean" } ? boolean : O[K] extends { multiple: true } ? string[] : string;
};

export function defineCommand<O extends Options>(command: Command<O>): Command<O> {
  return command;
}

export function parseCommandArgs<O extends Options>(command: Command<O>, argv: string[]): { values: ParsedValues<O>; positionals: string[] } {
  if (command.passThrough) return { values: {}, positionals: argv };
  try {
    const { values, positionals } = parseArgs({ args: argv, options: command.options, allowPositionals: true, strict: true });
    if (positionals.length > 0 && !command.positionals) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    return { values: values as ParsedValues<O>, positionals };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
}

/** Parses a positive integer option, or fails with a usage error naming it. */
export function intOption(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) <= 0) throw new UsageError(`--${name} must be a positive integer, got '${value}'`);
  return Number(value);
}

/**
 * Runs one command as the CLI does: `--help` prints its usage; a UsageError exits 2 and a UserError 1, each printed
 * without a stack trace. Anything else is a bug, and is thrown.
 */
export async function executeCommand(name: string, command: Command<any>, argv: string[], io: Io): Promise<number> {
  if ((argv.includes("--help") || argv.includes("-h")) && !command.passThrough) {
    io.stdout.write(`${command.summary}\n\nUsage: ${command.usage}\n`);
    return 0;
  }
  try {
    const { values, positionals } = parseCommandArgs(command, argv);
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
