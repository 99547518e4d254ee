/** The `--stack NAME | --file PATH` pair shared by commands that read a stack config. */
import { loadStackConfig, stackNameOf } from "../config/load";
import { UsageError } from "../core/errors";
import type { StackConfig } from "../config/schema";
import type { Options } from "./command";
import { cut } from "../core/redact";

export const stackOptions = {
  stack: {
    type: "string",
    value: "NAME",
    description: "The stack whose config is read: Pulumi.NAME.yaml in the project",
    defaultText: "qa (unless --file is given)",
    example: "--stack prod",
  },
  file: {
    type: "string",
    value: "PATH",
    description: "A stack config file to read instead of --stack (same format as Pulumi.<stack>.yaml)",
    example: "--file ./Pulumi.staging.yaml",
  },
} as const satisfies Options;

/** `--stack` (default qa) or `--file`, checked; the stack name of a file is read from its name. */
export function stackSelection(values: { stack?: string; file?: string }): { stack?: string; file?: string } {
  if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
  if (values.stack !== undefined && !/^[A-Za-z0-9_.-]+$/.test(values.stack))
    throw new UsageError(`--stack must be a stack name (letters, digits, _ . -), got '${cut(values.stack)}'`);
  return values.file ? { file: values.file, stack: stackNameOf(values.file) } : { stack: values.stack ?? "qa" };
}

export function loadFromOptions(values: { stack?: string; file?: string }): StackConfig {
  const selection = stackSelection(values);
  return loadStackConfig({ stack: values.file ? undefined : selection.stack, file: selection.file });
}
