/** Validation of raw stack config: the zod schema plus the rules that span several keys. */
import type { z } from "zod";
import { CONFIG_NAMESPACE, stackConfigSchema, stackFileConfigSchema, type StackConfig } from "./schema";
import { HUB_API_NAMES } from "../core/hubContract";
import { sortRegions } from "../core/regions";
import { UserError } from "../core/errors";

/** Stacks that are real environments: they may never point at loopback. */
export const PROTECTED_STACKS = ["qa", "prod"] as const;

export interface ConfigIssue {
  path: (string | number)[];
  message: string;
}

/** Bad config: every problem at once, one `<key path>: <message>` line each. */
export class ConfigError extends UserError {
  constructor(readonly source: string, readonly issues: ConfigIssue[]) {
    super([`${source}: invalid configuration (${issues.length} problem${issues.length === 1 ? "" : "s"})`, ...issues.map(formatIssue)]);
    this.name = "ConfigError";
  }
}

/** `hubExport:tenants[1].hubTenantId: must be a UUID ...` */
export function formatIssue(issue: ConfigIssue): string {
  const [head, ...rest] = issue.path;
  let key = head === undefined ? CONFIG_NAMESPACE : `${CONFIG_NAMESPACE}:${String(head)}`;
  for (const part of rest) key += typeof part === "number" ? `[${part}]` : `.${part}`;
  return `${key}: ${issue.message}`;
}

export interface ValidateOptions {
  /** Stack name; qa and prod may never allow loopback. */
  stack?: string;
  /** Where the raw config came from, for the first error line. */
  source: string;
  /** Values read from a stack file: secrets must be `secure:` there, never plain text. */
  fromFile?: boolean;
}

export function validateStackConfig(raw: unknown, options: ValidateOptions): StackConfig {
  const parsed = (options.fromFile ? stackFileConfigSchema : stackConfigSchema).safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap((i) => fromZod(i, raw));
    // Every problem at once: when only the stack file's rule on secrets failed, the rules across keys still run.
    const lenient = options.fromFile ? stackConfigSchema.safeParse(raw) : undefined;
    if (lenient?.success) issues.push(...crossFieldIssues(lenient.data, options));
    throw new ConfigError(options.source, issues);
  }
  const issues = crossFieldIssues(parsed.data, options);
  if (issues.length > 0) throw new ConfigError(options.source, issues);
  return parsed.data;
}

function fromZod(issue: z.core.$ZodIssue, raw: unknown): ConfigIssue[] {
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  if (issue.code === "unrecognized_keys") return issue.keys.map((key) => ({ path: [...path, key], message: "is not a known key" }));
  const present = path.reduce<unknown>((v, p) => (v && typeof v === "object" ? (v as Record<string | number, unknown>)[p] : undefined), raw);
  if (issue.code === "invalid_type" && present === undefined) return [{ path, message: "is required" }];
  return [{ path, message: issue.message }];
}

function crossFieldIssues(config: StackConfig, options: ValidateOptions): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });

  // Queue connections: one for every region with a tenant, none unused.
  const tenantRegions = new Set(config.tenants.map((t) => t.hubRegion));
  config.tenants.forEach((t, i) => {
    if (!config.queues[t.hubRegion]) add(["tenants", i, "hubRegion"], `region ${t.hubRegion} has no queue connection: add hubExport:queues.${t.hubRegion}`);
  });
  for (const region of sortRegions(Object.keys(config.queues) as never)) {
    if (!tenantRegions.has(region)) add(["queues", region], `queue connection for region ${region} is unused: no tenant is in ${region}`);
  }

  // Connection names are unique across the connection-strings entity collection.
  const names = new Map<string, string>();
  const claim = (name: string, path: (string | number)[]) => {
    const previous = names.get(name.toLowerCase());
    if (previous) add(path, `connection name '${name}' is already used by ${previous}`);
    else names.set(name.toLowerCase(), formatIssue({ path, message: "" }).slice(0, -2));
  };
  claim(config.bucket.connectionName, ["bucket", "connectionName"]);
  claim(config.database.connectionName, ["database", "connectionName"]);
  for (const region of sortRegions(Object.keys(config.queues) as never)) claim(config.queues[region]!.connectionName, ["queues", region, "connectionName"]);

  // Tenants are unique by id, code and platform region (the employees' scope).
  for (const key of ["hubTenantId", "hubTenantCode", "platRegion"] as const) {
    const seen = new Map<string, number>();
    config.tenants.forEach((t, i) => {
      const value = key === "hubTenantId" ? t[key].toLowerCase() : t[key];
      if (seen.has(value)) add(["tenants", i, key], `duplicates tenants[${seen.get(value)}].${key} '${t[key]}'`);
      else seen.set(value, i);
    });
  }

  // Hub URLs: the externally reachable host (-ext-), https; loopback only for the embedded default, explicitly.
  const stack = options.stack?.toLowerCase();
  if (config.hub.allowLoopback && stack && (PROTECTED_STACKS as readonly string[]).includes(stack)) {
    add(["hub", "allowLoopback"], `must not be true in stack '${options.stack}': only the embedded default may point at loopback`);
  }
  for (const api of HUB_API_NAMES) {
    const problem = urlProblem(config.hub.apis[api], config.hub.allowLoopback, true);
    if (problem) add(["hub", "apis", api], problem);
  }
  for (const region of sortRegions(Object.keys(config.queues) as never)) {
    const problem = urlProblem(config.queues[region]!.baseUrl, config.hub.allowLoopback, false);
    if (problem) add(["queues", region, "baseUrl"], problem);
  }

  // <DatabaseName>.<schema> must name the database the connection points to.
  for (const key of ["publishSchema", "stagingSchema"] as const) {
    const db = config[key].split(".")[0];
    if (db.toLowerCase() !== config.database.database.toLowerCase()) {
      add([key], `database '${db}' is not the database of the connection (hubExport:database.database is '${config.database.database}')`);
    }
  }
  if (config.publishSchema.toLowerCase() === config.stagingSchema.toLowerCase()) add(["stagingSchema"], "must differ from publishSchema");

  return issues;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

function urlProblem(value: string, allowLoopback: boolean, requireExt: boolean): string | undefined {
  const url = new URL(value);
  if (isLoopbackHost(url.hostname)) {
    return allowLoopback ? undefined : "points at loopback: only the embedded default may, with hubExport:hub.allowLoopback: true";
  }
  if (url.protocol !== "https:") return "must use https";
  if (requireExt && !url.hostname.includes("-ext-")) {
    return `host '${url.hostname}' must be the externally reachable form, with an -ext- segment`;
  }
  return undefined;
}
