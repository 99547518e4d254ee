/** Validation of raw stack config: the zod schema plus the rules that span several keys. */
import type { z } from "zod";
import { CONFIG_NAMESPACE, PROJECT_NAME, stackConfigSchema, stackFileConfigSchema, type StackConfig } from "./schema";
import { HUB_API_NAMES } from "../core/hubContract";
import { sortRegions } from "../core/regions";
import { unknownRoutingValues } from "../core/routingRules";
import { isLoopbackHost } from "../core/hubEndpoints";
import { UserError } from "../core/errors";
import { keyPathText, missingSecretPaths, stripPlaceholders, type KeyPath, type Placeholder } from "./placeholders";
import { unsafeTextIssues } from "./text";
import { closest } from "../core/didYouMean";

/** Stacks that are real environments: they may never point at loopback. */
export const PROTECTED_STACKS = ["qa", "prod"] as const;

export interface ConfigIssue {
  path: (string | number)[];
  message: string;
  /** The whole key, for a key outside the namespace (`hub-export:clientName`); else the path names it. */
  key?: string;
}

/** Bad config: every problem at once, one `<key path>: <message>` line each. */
export class ConfigError extends UserError {
  constructor(
    readonly source: string,
    readonly issues: ConfigIssue[],
  ) {
    super([
      `${source}: invalid configuration (${issues.length} problem${issues.length === 1 ? "" : "s"})`,
      ...issues.map(formatIssue),
    ]);
    this.name = "ConfigError";
  }
}

/** `hubExport:hubTenants[1].hubTenantId: must be a UUID ...` */
export function formatIssue(issue: ConfigIssue): string {
  return `${issue.key ?? keyPathText(CONFIG_NAMESPACE, issue.path)}: ${issue.message}`;
}

/**
 * The keys of a stack's config in the project's namespace (`hub-export:clientName`, what `pulumi config set
 * clientName` writes): the program never reads them.
 */
export function misplacedKeys(allConfig: Record<string, unknown>): string[] {
  return Object.keys(allConfig).filter((key) => key.startsWith(`${PROJECT_NAME}:`));
}

/** What is wrong with a misplaced key, and the commands that move it. */
export function misplacedKeyProblem(key: string, stack: string): { problem: string; command: string } {
  const name = key.slice(key.indexOf(":") + 1);
  const rm = `pulumi config rm --stack ${stack} ${shellQuote(key)}`;
  const problem = `not read: the program's keys are in namespace ${CONFIG_NAMESPACE}`;
  return { problem, command: `${rm} and set ${shellQuote(`${CONFIG_NAMESPACE}:${name}`)} instead` };
}

/** A value in single quotes for a POSIX shell. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Every hub API URL of the config with its key path: hub.default's and each region's. */
export function hubUrls(config: StackConfig): { path: (string | number)[]; url: string }[] {
  const out: { path: (string | number)[]; url: string }[] = [];
  for (const api of HUB_API_NAMES) {
    const url = config.hub.default?.apis?.[api];
    if (url) out.push({ path: ["hub", "default", "apis", api], url });
  }
  for (const region of sortRegions(Object.keys(config.hub.regions) as never)) {
    for (const api of HUB_API_NAMES) {
      const url = config.hub.regions[region]?.apis?.[api];
      if (url) out.push({ path: ["hub", "regions", region, "apis", api], url });
    }
  }
  return out;
}

export interface ValidateOptions {
  /** Stack name; qa and prod may never allow loopback. */
  stack?: string;
  /** Where the raw config came from, for the first error line. */
  source: string;
  /** Values read from a stack file: secrets must be `secure:` there, never plain text. */
  fromFile?: boolean;
  /** Check that hubExport:environment names the stack (the CLI on a stack file, and the real program). */
  checkEnvironment?: boolean;
  /** Keys of the stack in the project's namespace (misplacedKeys): named with the problems, whatever else is wrong. */
  misplacedKeys?: string[];
}

/** Validated config, and what is left to set before a real `pulumi up` (config/preflight.ts). */
export interface InspectedConfig {
  config: StackConfig;
  placeholders: Placeholder[];
  missingSecrets: KeyPath[];
}

export function inspectStackConfig(raw: unknown, options: ValidateOptions): InspectedConfig {
  // A key set without the namespace is often why a value is missing: name it with the problems.
  const misplaced = (options.misplacedKeys ?? []).map((key) => {
    const { problem, command } = misplacedKeyProblem(key, options.stack ?? "<stack>");
    return { path: [], key, message: `${problem}: ${command}` };
  });
  const invalid = (issues: ConfigIssue[]) => new ConfigError(options.source, [...issues, ...misplaced]);
  const { value, placeholders } = stripPlaceholders(raw);
  // Text no key may hold (control characters, overlong values), checked at any depth first: one line per key, so a
  // key's own rule does not report the same value again.
  const unsafe = unsafeTextIssues(value);
  const reported = (path: (string | number)[]) => unsafe.some((u) => u.path.every((p, i) => path[i] === p));
  const parsed = (options.fromFile ? stackFileConfigSchema : stackConfigSchema).safeParse(value);
  if (!parsed.success || unsafe.length > 0) {
    const issues = [
      ...unsafe,
      ...(parsed.success ? [] : parsed.error.issues.flatMap((i) => fromZod(i, value)).filter((i) => !reported(i.path))),
    ];
    if (parsed.success) throw invalid(issues);
    // Every problem at once: when only the stack file's rule on secrets failed, the rules across keys still run.
    const lenient = options.fromFile ? stackConfigSchema.safeParse(value) : undefined;
    if (lenient?.success) issues.push(...crossFieldIssues(lenient.data, options));
    throw invalid(issues);
  }
  const issues = crossFieldIssues(parsed.data, options);
  if (issues.length > 0) throw invalid(issues);
  return { config: parsed.data, placeholders, missingSecrets: missingSecretPaths(parsed.data) };
}

export function validateStackConfig(raw: unknown, options: ValidateOptions): StackConfig {
  return inspectStackConfig(raw, options).config;
}

/**
 * True when the stack's name says the environment: `qa` for QA, also `acme-qa` or `org/acme-qa`. A stack file
 * copied to another stack without changing hubExport:environment would deploy one environment's values into another.
 */
export function stackMatchesEnvironment(stack: string, environment: string): boolean {
  const name = stack.split("/").pop()!.toLowerCase();
  return name.split(/[-_.]/).includes(environment.toLowerCase());
}

function fromZod(issue: z.core.$ZodIssue, raw: unknown): ConfigIssue[] {
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  if (issue.code === "unrecognized_keys") {
    const known = knownKeys(stackFileConfigSchema, path);
    return issue.keys.map((key) => {
      const near = closest(key, known);
      return { path: [...path, key], message: `is not a known key${near ? ` (did you mean ${near}?)` : ""}` };
    });
  }
  const present = path.reduce<unknown>(
    (v, p) => (v && typeof v === "object" ? (v as Record<string | number, unknown>)[p] : undefined),
    raw,
  );
  if (issue.code === "invalid_type" && present === undefined) return [{ path, message: "is required" }];
  const absent = present === undefined;
  if (issue.code === "invalid_value" && absent) return [{ path, message: `is required: ${issue.message}` }];
  return [{ path, message: issue.message }];
}

function crossFieldIssues(config: StackConfig, options: ValidateOptions): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });
  const queueRegions = sortRegions(Object.keys(config.queues) as never);

  // Queue connections: one for every region with a hub tenant, none unused.
  const tenantRegions = new Set(config.hubTenants.map((t) => t.hubRegion));
  config.hubTenants.forEach((t, i) => {
    if (!config.queues[t.hubRegion])
      add(
        ["hubTenants", i, "hubRegion"],
        `region ${t.hubRegion} has no queue connection: add hubExport:queues.${t.hubRegion}`,
      );
  });
  for (const region of queueRegions) {
    if (!tenantRegions.has(region))
      add(["queues", region], `queue connection for region ${region} is unused: no hub tenant is in ${region}`);
  }

  // Hub environments: complete for every region with a hub tenant (its own values over hub.default's).
  for (const region of sortRegions(tenantRegions)) {
    if (config.hub.environments[region]) continue;
    const own = config.hub.regions[region];
    const missing = [
      ...((own?.environmentName ?? config.hub.default?.environmentName) ? [] : ["environmentName"]),
      ...HUB_API_NAMES.filter((api) => !(own?.apis?.[api] ?? config.hub.default?.apis?.[api])).map(
        (api) => `apis.${api}`,
      ),
    ];
    add(
      ["hub", "regions", region],
      `hub region ${region} has hub tenants but no ${missing.join(", ")} (set it here or in hubExport:hub.default)`,
    );
  }

  // Connection names are unique across the connection-strings entity collection.
  const names = new Map<string, string>();
  const claim = (name: string, path: (string | number)[]) => {
    const previous = names.get(name.toLowerCase());
    if (previous) add(path, `connection name '${name}' is already used by ${previous}`);
    else names.set(name.toLowerCase(), keyPathText(CONFIG_NAMESPACE, path));
  };
  claim(config.bucket.connectionName, ["bucket", "connectionName"]);
  claim(config.database.connectionName, ["database", "connectionName"]);
  for (const region of queueRegions) claim(config.queues[region]!.connectionName, ["queues", region, "connectionName"]);

  // Hub tenants are unique by id and code; platform tenants by platform region (HUB_PLAT_CONFIG: one row per
  // plat_client_name and plat_region), each pointing at a hub tenant; every hub tenant is fed by one at least.
  const unique = <T>(list: T[], listKey: string, key: keyof T & string, norm: (v: string) => string = (v) => v) => {
    const seen = new Map<string, number>();
    list.forEach((item, i) => {
      const value = norm(String(item[key]));
      if (seen.has(value))
        add([listKey, i, key], `duplicates ${listKey}[${seen.get(value)}].${key} '${String(item[key])}'`);
      else seen.set(value, i);
    });
  };
  unique(config.hubTenants, "hubTenants", "hubTenantId", (v) => v.toLowerCase());
  unique(config.hubTenants, "hubTenants", "hubTenantCode");
  unique(config.platTenants, "platTenants", "platRegion");
  const codes = new Set(config.hubTenants.map((t) => t.hubTenantCode));
  config.platTenants.forEach((p, i) => {
    if (!codes.has(p.hubTenantCode))
      add(
        ["platTenants", i, "hubTenantCode"],
        `names no hub tenant: '${p.hubTenantCode}' is not a hubTenantCode of hubExport:hubTenants (${[...codes].join(", ")})`,
      );
  });
  const fed = new Set(config.platTenants.map((p) => p.hubTenantCode));
  config.hubTenants.forEach((t, i) => {
    if (!fed.has(t.hubTenantCode))
      add(
        ["hubTenants", i],
        `hub tenant ${t.hubTenantCode} is fed by no platform tenant: add a hubExport:platTenants entry with hubTenantCode ${t.hubTenantCode}, or remove it`,
      );
  });

  const stack = options.stack?.toLowerCase();
  const protectedStack = stack !== undefined && (PROTECTED_STACKS as readonly string[]).includes(stack);
  if (options.checkEnvironment && options.stack && !stackMatchesEnvironment(options.stack, config.environment)) {
    add(
      ["environment"],
      `is '${config.environment}', but the stack is '${options.stack}': a stack deploys only its own environment (name the stack after it, like ${config.environment.toLowerCase()})`,
    );
  }

  // Build once, promote by digest: a PROD stack runs the image qa tested and never builds one of its own.
  if (config.environment === "PROD" && !config.image.promoted) {
    add(
      ["image", "promoted"],
      "is required in a PROD stack: prod runs the image qa tested, by digest, and never builds (set it to the output 'image' of the stack that built it; docs/pulumi-reference.md, \"Promoting an image\")",
    );
  }

  // TLS: qa and prod verify the server against a configured CA bundle.
  const db = config.database;
  if (protectedStack) {
    if (db.sslMode !== "verify-full")
      add(
        ["database", "sslMode"],
        `must be verify-full in stack '${options.stack}': the server's certificate is checked against database.caBundle`,
      );
    else if (!db.caBundle)
      add(
        ["database", "caBundle"],
        `is required in stack '${options.stack}': the PEM file of the CA that signs the server's certificate (for RDS, the region's bundle)`,
      );
  }
  if (db.caBundle && db.sslMode !== "verify-full")
    add(["database", "caBundle"], "is only used with sslMode verify-full");

  // Hub URLs: the externally reachable host (-ext-), https; loopback only for the embedded default, explicitly.
  if (config.hub.allowLoopback && protectedStack) {
    add(
      ["hub", "allowLoopback"],
      `must not be true in stack '${options.stack}': only the embedded default may point at loopback`,
    );
  }
  for (const { path, url } of hubUrls(config)) {
    const problem = urlProblem(url, config.hub.allowLoopback, true);
    if (problem) add(path, problem);
  }
  for (const region of queueRegions) {
    const problem = urlProblem(config.queues[region]!.baseUrl, config.hub.allowLoopback, false);
    if (problem) add(["queues", region, "baseUrl"], problem);
  }

  // <DatabaseName>.<schema> must name the database the connection points to.
  for (const key of ["publishSchema", "stagingSchema"] as const) {
    const db = config[key].split(".")[0];
    if (db.toLowerCase() !== config.database.database.toLowerCase()) {
      add(
        [key],
        `database '${db}' is not the database of the connection (hubExport:database.database is '${config.database.database}')`,
      );
    }
  }
  if (config.publishSchema.toLowerCase() === config.stagingSchema.toLowerCase())
    add(["stagingSchema"], "must differ from publishSchema");

  return issues;
}

/**
 * Warnings, never refusals: custom routing-rule values outside the specification's lists (core/routingRules.ts). Other
 * data flows use other codes; the hub must know them.
 */
export function routingRuleWarnings(config: StackConfig): ConfigIssue[] {
  return config.hubTenants.flatMap((tenant, i) =>
    (tenant.routingRules ?? []).flatMap((rule, j) =>
      unknownRoutingValues(rule).map(({ field, value, known }) => ({
        path: ["hubTenants", i, "routingRules", j, field],
        message: `${JSON.stringify(value)} is not among the specification's values (${known.map((v) => JSON.stringify(v)).join(", ")}): check that the hub knows it`,
      })),
    ),
  );
}

function urlProblem(value: string, allowLoopback: boolean, requireExt: boolean): string | undefined {
  const url = new URL(value);
  if (isLoopbackHost(url.hostname)) {
    return allowLoopback
      ? undefined
      : "points at loopback: only the embedded default may, with hubExport:hub.allowLoopback: true";
  }
  if (url.protocol !== "https:") return "must use https";
  if (requireExt && !url.hostname.includes("-ext-")) {
    return `host '${url.hostname}' must be the externally reachable form, with an -ext- segment`;
  }
  return undefined;
}

/** The keys the schema knows for the object at `path`, for "did you mean". */
function knownKeys(schema: z.ZodType, path: (string | number)[]): string[] {
  type Def = Record<string, unknown> & {
    type: string;
    shape?: Record<string, z.ZodType>;
    element?: z.ZodType;
    valueType?: z.ZodType;
    keyType?: z.ZodType;
    entries?: Record<string, unknown>;
  };
  const WRAPPERS = ["optional", "nullable", "default", "prefault", "catch", "readonly", "nonoptional"];
  const def = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;
  const keys = (s: z.ZodType, path: (string | number)[]): string[] => {
    const d = def(s);
    const [head, ...tail] = path;
    if (d.type === "object") {
      if (!path.length) return Object.keys(d.shape!);
      return typeof head === "string" && d.shape![head] ? keys(d.shape![head], tail) : [];
    }
    if (d.type === "array") return typeof head === "number" ? keys(d.element!, tail) : [];
    if (d.type === "record") {
      if (path.length) return keys(d.valueType!, tail);
      return d.keyType && def(d.keyType).type === "enum" ? Object.keys(def(d.keyType).entries!) : [];
    }
    // The schemas a wrapper (optional, default, a pipe of a transform ...) stands for.
    let inner: unknown = [];
    if (WRAPPERS.includes(d.type)) inner = [d.innerType];
    else if (d.type === "pipe") inner = [d.in, d.out];
    else if (d.type === "union") inner = d.options;
    return (inner as z.ZodType[]).flatMap((x) => keys(x, path));
  };
  return [...new Set(keys(schema, path))];
}
