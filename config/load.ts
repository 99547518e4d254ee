/** Reading stack config from a `Pulumi.<stack>.yaml` file (CLI, local mode) or from the Pulumi engine (index.ts). */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { CONFIG_NAMESPACE, type StackConfig } from "./schema";
import { ConfigError, inspectStackConfig, misplacedKeys, type InspectedConfig } from "./validate";
import { UserError } from "../core/errors";
import { isScriptsReleaseError, readScriptsRelease, type ScriptsRelease } from "../core/scriptsRelease";

export const PROJECT_ROOT = path.resolve(__dirname, "..");

/** A release read from its zip, with where it was read from (the resource reads it again there at `pulumi up`). */
export interface LoadedScriptsRelease extends ScriptsRelease {
  /**
   * The zip's path relative to the project folder, with /: the folder where Pulumi starts the program and its
   * providers. Never absolute: the resource's state must be the same from every checkout.
   */
  zipPath: string;
  /** The configured value, for messages. */
  source: string;
}

/**
 * A file or folder the config names (`key`), relative to the project folder: its absolute path. Refused when it leads
 * out of the project, by `..` or through a symbolic link (the schema already refuses absolute paths and `..`).
 */
export function projectFile(relative: string, key: string, root: string = PROJECT_ROOT): string {
  const absolute = path.resolve(root, relative);
  const inside = (file: string, folder: string) => file === folder || file.startsWith(folder + path.sep);
  let real: string | undefined;
  try {
    real = fs.realpathSync(absolute);
  } catch {
    // Not there (yet): its reader says so.
  }
  const realRoot = fs.realpathSync(root);
  if (!inside(absolute, path.resolve(root)) || (real !== undefined && !inside(real, realRoot))) {
    throw new UserError(
      `${key}: ${relative} leads out of the project folder${real && real !== absolute ? ` (to ${real})` : ""}: keep it inside the project`,
    );
  }
  return absolute;
}

/** `hubExport:scriptsRelease.zip` (relative to the project), read and checked: providers/scriptsRelease.ts. */
export async function loadScriptsRelease(zip: string): Promise<LoadedScriptsRelease> {
  const file = projectFile(zip, "hubExport:scriptsRelease.zip");
  const source = `hubExport:scriptsRelease.zip ${zip}`;
  let buffer: Buffer;
  try {
    buffer = fs.readFileSync(file);
  } catch (err) {
    throw new UserError(
      `hubExport:scriptsRelease.zip: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  try {
    return {
      ...(await readScriptsRelease(buffer, source)),
      zipPath: path.relative(PROJECT_ROOT, file).split(path.sep).join("/"),
      source,
    };
  } catch (err) {
    throw isScriptsReleaseError(err) ? new UserError((err as Error).message) : err;
  }
}

export function stackFilePath(stack: string): string {
  return path.join(PROJECT_ROOT, `Pulumi.${stack}.yaml`);
}

/** The `hubExport:` keys of a stack file's `config:` block, namespace stripped. */
export function readStackFile(file: string): Record<string, unknown> {
  return namespaceValues(readStackFileConfig(file));
}

/** A stack file's whole `config:` block (every namespace). */
export function readStackFileConfig(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(
      `${file}: cannot read the stack file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    throw new UserError(yamlProblem(file, err as Error & { linePos?: { line: number; col: number }[] }));
  }
  const config = (doc as { config?: unknown } | null)?.config;
  if (!config || typeof config !== "object")
    throw new ConfigError(file, [{ path: [], message: "the stack file has no config: block" }]);
  return config as Record<string, unknown>;
}

/** `Pulumi.qa.yaml:5:1: not valid YAML: All mapping items must start at the same column` (the parser's frame dropped). */
function yamlProblem(file: string, err: Error & { linePos?: { line: number; col: number }[] }): string {
  const reason = err.message.split("\n")[0].replace(/ at line \d+, column \d+:?\s*$/, "");
  const at = err.linePos?.[0];
  return `${at ? `${file}:${at.line}:${at.col}` : file}: not valid YAML: ${reason}`;
}

/** The stacks with a `Pulumi.<stack>.yaml` in the project. */
export function availableStacks(): string[] {
  return fs
    .readdirSync(PROJECT_ROOT)
    .map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
}

export function namespaceValues(config: Record<string, unknown>): Record<string, unknown> {
  const prefix = `${CONFIG_NAMESPACE}:`;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) if (key.startsWith(prefix)) out[key.slice(prefix.length)] = value;
  return out;
}

export interface LoadOptions {
  stack?: string;
  file?: string;
  /** Applied to the raw values before validation (local mode's loopback URLs and generated secrets). */
  override?: (raw: Record<string, unknown>) => Record<string, unknown>;
}

/** Loads and validates `--stack NAME` (Pulumi.NAME.yaml) or `--file PATH`. */
export function loadStackConfig(options: LoadOptions): StackConfig {
  return inspectStackFile(options).config;
}

/** A stack file validated, and its whole `config:` block as read (every namespace). */
export interface InspectedStackFile extends InspectedConfig {
  allConfig: Record<string, unknown>;
}

/** loadStackConfig, with the placeholders and secrets still to set (validate lists them). */
export function inspectStackFile(options: LoadOptions): InspectedStackFile {
  const file = options.file ?? stackFilePath(options.stack ?? "qa");
  if (!options.file && !fs.existsSync(file)) {
    throw new UserError(
      `no stack '${options.stack ?? "qa"}': ${path.basename(file)} does not exist in ${PROJECT_ROOT}; the stacks are ${availableStacks().join(", ") || "none"} (or give --file PATH)`,
    );
  }
  const stack = options.stack ?? stackNameOf(file);
  const all = readStackFileConfig(file);
  let raw = namespaceValues(all);
  if (options.override) raw = options.override(raw);
  // The stack-name check is for a stack named with --stack: a --file's name is only a guess, and local mode's
  // overrides change the environment to LOCAL.
  const inspected = inspectStackConfig(raw, {
    source: file,
    stack,
    fromFile: !options.override,
    checkEnvironment: !options.override && options.stack !== undefined,
    misplacedKeys: misplacedKeys(all),
  });
  return { ...inspected, allConfig: all };
}

/** `Pulumi.qa.yaml` → `qa`. */
export function stackNameOf(file: string): string | undefined {
  return /^Pulumi\.(.+)\.ya?ml$/.exec(path.basename(file))?.[1];
}

/**
 * Config as the Pulumi engine hands it over: every value is a string (objects as JSON), secrets already decrypted.
 * `all` is `pulumi.runtime.allConfig()`; the program itself reads through pulumi.Config (components/program.ts).
 */
export function configFromEngine(all: Record<string, string>, stack: string): StackConfig {
  const raw = namespaceValues(all);
  for (const [key, value] of Object.entries(raw)) {
    // Top-level values are objects, arrays or strings; only the first two arrive as JSON text.
    if (typeof value === "string" && isJsonText(value)) raw[key] = JSON.parse(value);
  }
  return inspectEngineConfig(raw, stack).config;
}

/**
 * Config values as the program reads them (namespace stripped, objects parsed), validated for stack `stack`. A real
 * run also checks that the environment is the stack's; the offline plan may run a file under any name.
 */
export function inspectEngineConfig(
  raw: Record<string, unknown>,
  stack: string,
  options: { checkEnvironment?: boolean; misplacedKeys?: string[] } = {},
): InspectedConfig {
  return inspectStackConfig(raw, {
    source: `stack '${stack}'`,
    stack,
    checkEnvironment: options.checkEnvironment ?? true,
    misplacedKeys: options.misplacedKeys,
  });
}

/** An object or array in its JSON text form (top-level config values are objects, arrays or strings). */
export function isJsonText(value: string): boolean {
  if (!/^\s*[[{]/.test(value)) return false;
  try {
    JSON.parse(value);
    return true;
  } catch {
    return false;
  }
}
