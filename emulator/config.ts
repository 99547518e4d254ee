/**
 * The emulator's configuration: who may authorize against each regional broker, which hub tenants exist, and a few
 * behaviours. Validated with zod; a bad config is a UserError with one `<key path>: <message>` line per problem.
 */
import fs from "node:fs";
import { z } from "zod";
import { QUEUE_API } from "../core/hubContract";
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import { UserError } from "../core/errors";
import { UUID } from "../core/uuid";

/** The ERS batch limit, the specification's records_per_ers_request default. */
export const DEFAULT_ERS_MAX_BATCH = 100;

/** Queue (destination) names as the broker takes them. */
export const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** orgId and envId are path segments: no slashes, no spaces. */
const PATH_SEGMENT = /^[A-Za-z0-9_.~-]{1,128}$/;

/** The hub API endpoints (fault endpoint names) that `missingEndpoints` may remove. */
export const HUB_API_ENDPOINTS = ["cfg.routingRules", "ers.entities", "hrsys.intakeJobs"] as const;
export type HubApiEndpoint = (typeof HUB_API_ENDPOINTS)[number];

const nonEmpty = z.string().min(1, "must not be empty").max(1024, "must be at most 1024 characters");
const pathSegment = z.string().regex(PATH_SEGMENT, "must hold only letters, digits, _ . ~ - (1 to 128)");
const queueName = z.string().regex(QUEUE_NAME, "must hold only letters, digits, _ . - (1 to 128)");

const queueRegionSchema = z.strictObject({
  clientId: nonEmpty,
  clientSecret: nonEmpty,
  orgId: pathSegment,
  envId: pathSegment,
  /** When given, only these destinations exist in the region (others answer 404); otherwise any valid name does. */
  destinations: z.array(queueName).optional(),
});
export type QueueRegionConfig = z.infer<typeof queueRegionSchema>;

const tenantSchema = z.strictObject({
  clientId: nonEmpty,
  clientSecret: nonEmpty,
  /** The tenant's hub region: its hub API requests take that region's latency and rate limit (emulator/link.ts). */
  region: z.enum(HUB_REGIONS, { error: `must be one of ${HUB_REGIONS.join(", ")}` }).optional(),
});
export type TenantConfig = z.infer<typeof tenantSchema>;

/** The config file (and `startEmulator({config})`): everything optional, filled from the dev config. */
export const emulatorConfigSchema = z.strictObject({
  /** Per region; a region left out keeps the dev config's broker. */
  queues: z
    .strictObject({
      US: queueRegionSchema.optional(),
      EU: queueRegionSchema.optional(),
      APAC: queueRegionSchema.optional(),
    })
    .optional(),
  /** Hub tenant id → credentials; when given it replaces the dev tenants. */
  tenants: z
    .record(z.string().regex(UUID, "tenant ids must be UUIDs (8-4-4-4-12 hex digits)"), tenantSchema)
    .optional(),
  /** Fractions are allowed so tests can use a tiny lifetime. */
  tokenTtlSeconds: z.number().positive("must be a positive number").default(QUEUE_API.tokenTtlSeconds),
  ersMaxBatch: z
    .number()
    .int("must be an integer")
    .positive("must be a positive integer")
    .default(DEFAULT_ERS_MAX_BATCH),
  /** Keep message bodies and properties; the benchmark turns this off to store only sizes. */
  retainBodies: z.boolean().default(true),
  /** Queue names that reject every message permanently, in every region. */
  rejectDestinations: z.array(queueName).default([]),
  /** false (default): standard at-least-once queues, a republished messageId is stored again; true: the first publish wins. */
  deduplicate: z.boolean().default(false),
  /** Hub API endpoints this hub lacks (404), to play a hub without the assumed ERS or HRSYS paths. */
  missingEndpoints: z
    .array(z.enum(HUB_API_ENDPOINTS, { error: `must be one of ${HUB_API_ENDPOINTS.join(", ")}` }))
    .default([]),
});
export type EmulatorConfigInput = z.input<typeof emulatorConfigSchema>;

export type EmulatorConfig = Omit<z.output<typeof emulatorConfigSchema>, "queues" | "tenants"> & {
  queues: Record<HubRegion, QueueRegionConfig>;
  tenants: Record<string, TenantConfig>;
};

/** Built-in credentials for local use only; printed by `hub-export emulator` when it runs without --config. */
export const DEV_QUEUES: Record<HubRegion, QueueRegionConfig> = {
  US: { clientId: "dev-mq-us-client", clientSecret: "dev-mq-us-secret", orgId: "dev-org-us", envId: "dev-env-us" },
  EU: { clientId: "dev-mq-eu-client", clientSecret: "dev-mq-eu-secret", orgId: "dev-org-eu", envId: "dev-env-eu" },
  APAC: {
    clientId: "dev-mq-apac-client",
    clientSecret: "dev-mq-apac-secret",
    orgId: "dev-org-apac",
    envId: "dev-env-apac",
  },
};

/** One dev tenant per region, in HUB_REGIONS order. */
export const DEV_TENANTS: Record<string, TenantConfig> = {
  "11111111-1111-4111-8111-111111111111": {
    clientId: "dev-tenant-us",
    clientSecret: "dev-tenant-us-secret",
    region: "US",
  },
  "22222222-2222-4222-8222-222222222222": {
    clientId: "dev-tenant-eu",
    clientSecret: "dev-tenant-eu-secret",
    region: "EU",
  },
  "33333333-3333-4333-8333-333333333333": {
    clientId: "dev-tenant-apac",
    clientSecret: "dev-tenant-apac-secret",
    region: "APAC",
  },
};

/** Validates raw config (parsed JSON or an in-process object) and fills it from the dev config. */
export function resolveConfig(raw: unknown, source = "emulator config"): EmulatorConfig {
  const parsed = emulatorConfigSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map(formatIssue);
    throw new UserError([
      `${source}: invalid configuration (${lines.length} problem${lines.length === 1 ? "" : "s"})`,
      ...lines,
    ]);
  }
  const queues = {} as Record<HubRegion, QueueRegionConfig>;
  for (const region of HUB_REGIONS) queues[region] = parsed.data.queues?.[region] ?? DEV_QUEUES[region];
  return { ...parsed.data, queues, tenants: parsed.data.tenants ?? { ...DEV_TENANTS } };
}

/** Reads and validates a JSON config file. */
export function loadConfigFile(file: string): EmulatorConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(
      `${file}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${file}: not valid JSON: ${(err as Error).message}`);
  }
  return resolveConfig(raw, file);
}

/** `queues.US.orgId: must hold only ...`; never quotes the offending value, which may be a secret. */
function formatIssue(issue: z.core.$ZodIssue): string {
  let key = "";
  for (const part of issue.path) {
    if (typeof part === "number") key += `[${part}]`;
    else key += key ? `.${String(part)}` : String(part);
  }
  let message = issue.message;
  if (issue.code === "unrecognized_keys")
    message = `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
  else if (issue.code === "invalid_type" && (issue as { input?: unknown }).input === undefined) message = "is required";
  else if (issue.code === "invalid_key" && issue.issues[0]) message = issue.issues[0].message;
  return `${key || "(config)"}: ${message}`;
}
