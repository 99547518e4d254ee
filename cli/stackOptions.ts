/** The `--stack NAME | --file PATH` pair shared by commands that read a stack config. */
import type { LoadOptions } from "../config/load";
import { loadStackConfig, stackNameOf } from "../config/load";
import { UsageError } from "../core/errors";
import type { StackConfig } from "../config/schema";

export const stackOptions = {
  stack: { type: "string" },
  file: { type: "string" },
} as const;

export const STACK_USAGE = "[--stack NAME | --file PATH]";

/** `--stack` (default qa) or `--file`, checked; the stack name of a file is read from its name. */
export function stackSelection(values: { stack?: string; file?: string }): { stack?: string; file?: string } {
  if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
  if (values.stack !== undefined && !/^[A-Za-z0-9_.-]+$/.test(values.stack)) throw new UsageError(`--stack must be a stack name, got '${values.stack}'`);
  return values.file ? { file: values.file, stack: stackNameOf(values.file) } : { stack: values.stack ?? "qa" };
}

export function loadFromOptions(values: { stack?: string; file?: string }, extra: Omit<LoadOptions, "stack" | "file"> = {}): StackConfig {
  const selection = stackSelection(values);
  return loadStackConfig({ stack: values.file ? undefined : selection.stack, file: selection.file, ...extra });
}
