/** The `--stack NAME | --file PATH` pair shared by commands that read a stack config. */
import type { LoadOptions } from "../config/load";
import { loadStackConfig } from "../config/load";
import { UsageError } from "../core/errors";
import type { StackConfig } from "../config/schema";

export const stackOptions = {
  stack: { type: "string" },
  file: { type: "string" },
} as const;

export const STACK_USAGE = "[--stack NAME | --file PATH]";

export function loadFromOptions(values: { stack?: string; file?: string }, extra: Omit<LoadOptions, "stack" | "file"> = {}): StackConfig {
  if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
  if (values.stack !== undefined && !/^[A-Za-z0-9_.-]+$/.test(values.stack)) throw new UsageError(`--stack must be a stack name, got '${values.stack}'`);
  return loadStackConfig({ stack: values.file ? undefined : (values.stack ?? "qa"), file: values.file, ...extra });
}
