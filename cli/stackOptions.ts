/** The `--stack NAME | --file PATH` pair shared by commands that read a stack config. */
import type { LoadOptions } from "../config/load";
import { loadStackConfig } from "../config/load";
import { UsageError } from "../core/errors";
import type { StackConfig } from "../config/schema";
import type { Options } from "./command";

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

export function loadFromOptions(values: { stack?: string; file?: string }, extra: Omit<LoadOptions, "stack" | "file"> = {}): StackConfig {
  if (values.stack && values.file) throw new UsageError("give --stack or --file, not both");
  if (values.stack !== undefined && !/^[A-Za-z0-9_.-]+$/.test(values.stack)) throw new UsageError(`--stack must be a stack name (letters, digits, _ . -), got '${values.stack}'`);
  return loadStackConfig({ stack: values.file ? undefined : (values.stack ?? "qa"), file: values.file, ...extra });
}
