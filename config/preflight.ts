/**
 * The preflight of a real `pulumi preview` or `up`: secrets not set, placeholders left, keys in the wrong namespace, a
 * missing CA bundle and an unpinned AWS account stop the run before anything is registered, one line each with the
 * command that fixes it. `hub-export validate` lists the same items (readinessItems); the offline plan skips it.
 */
import fs from "node:fs";
import { UserError } from "../core/errors";
import { CONFIG_NAMESPACE } from "./schema";
import { isPlaceholder, keyPathText } from "./placeholders";
import { misplacedKeyProblem, misplacedKeys, shellQuote, type InspectedConfig } from "./validate";
import { projectFile } from "./load";

/** The AWS provider's key that pins the account a stack may deploy to. */
export const ALLOWED_ACCOUNTS_KEY = "aws:allowedAccountIds";

export interface PreflightItem {
  key: string;
  problem: string;
  command: string;
}

function accountItems(value: unknown, stack: string): PreflightItem[] {
  const fix = (i: number) =>
    `pulumi config set ${stack} --path ${shellQuote(`${ALLOWED_ACCOUNTS_KEY}[${i}]`)} <12-digit account id>`;
  let ids: unknown = value;
  if (typeof value === "string") {
    try {
      ids = JSON.parse(value);
    } catch {
      ids = value;
    }
  }
  if (!Array.isArray(ids) || ids.length === 0) {
    return [
      { key: ALLOWED_ACCOUNTS_KEY, problem: "not set: each stack pins the AWS account it deploys to", command: fix(0) },
    ];
  }
  const items: PreflightItem[] = [];
  ids.forEach((id, i) => {
    const key = `${ALLOWED_ACCOUNTS_KEY}[${i}]`;
    if (isPlaceholder(id))
      items.push({ key, problem: `placeholder (example: ${id.slice("PLACEHOLDER:".length)})`, command: fix(i) });
    else if (accountIdText(id) === undefined)
      items.push({ key, problem: "must be a 12-digit AWS account id", command: fix(i) });
  });
  return items;
}

/**
 * An AWS account id as text: `pulumi config set --path 'aws:allowedAccountIds[0]' 123456789012` stores the digits as
 * a YAML integer (an id with a leading zero stays a string), so both forms are read. Undefined when it is not one.
 */
export function accountIdText(id: unknown): string | undefined {
  const text = typeof id === "number" && Number.isSafeInteger(id) ? String(id) : id;
  return typeof text === "string" && /^\d{12}$/.test(text) ? text : undefined;
}

/** A stack that is not ready: the values left to set, each with the command that sets it. */
export class PreflightError extends UserError {
  constructor(
    readonly stack: string,
    readonly items: PreflightItem[],
  ) {
    super([
      `stack '${stack}' is not ready: ${items.length} value${items.length === 1 ? "" : "s"} to set first (nothing was registered)`,
      ...items.map((i) => `  ${i.key}: ${i.problem}: ${i.command}`),
    ]);
    this.name = "PreflightError";
  }
}

export interface ReadinessInput {
  stack: string;
  inspected: InspectedConfig;
  /** The stack's whole config block, every namespace: values as a stack file holds them, or the engine's JSON text. */
  allConfig: Record<string, unknown>;
  /** The project folder, where the config's file paths start. */
  root: string;
}

/** Everything a real `preview` or `up` stops on, in one list: the preflight and `hub-export validate` both use it. */
export function readinessItems({ stack: name, inspected, allConfig, root }: ReadinessInput): PreflightItem[] {
  const stack = `--stack ${name}`;
  const items: PreflightItem[] = [];
  for (const path of inspected.missingSecrets) {
    const key = keyPathText(CONFIG_NAMESPACE, path);
    // No value on the command line: the CLI prompts for it without echo, and it stays out of the shell history.
    items.push({
      key,
      problem: "secret not set",
      command: `pulumi config set ${stack} --secret --path ${shellQuote(key)}`,
    });
  }
  for (const p of inspected.placeholders) {
    const key = keyPathText(CONFIG_NAMESPACE, p.path);
    items.push({
      key,
      problem: `placeholder (example: ${p.example})`,
      command: `pulumi config set ${stack} --path ${shellQuote(key)} <value>`,
    });
  }
  for (const key of misplacedKeys(allConfig)) items.push({ key, ...misplacedKeyProblem(key, name) });
  // The CA bundle named by database.caBundle, resolved from the project folder.
  const caBundle = inspected.config.database.caBundle;
  if (caBundle && !fs.existsSync(projectFile(caBundle, "hubExport:database.caBundle", root)))
    items.push({
      key: keyPathText(CONFIG_NAMESPACE, ["database", "caBundle"]),
      problem: `file ${caBundle} not found`,
      command: `download the CA bundle of the database's server to ${caBundle} (for RDS: https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem)`,
    });
  items.push(...accountItems(allConfig[ALLOWED_ACCOUNTS_KEY], stack));
  return items;
}

export function preflight(input: ReadinessInput): void {
  const items = readinessItems(input);
  if (items.length > 0) throw new PreflightError(input.stack, items);
}
