/**
 * The hub and queue contracts (docs/hub-contract.md): the one module that the emulator, the export task and the
 * providers share. Everything marked ASSUMED is not in the specification; change it here when the hub's real
 * documentation arrives.
 */
import { z } from "zod";
import { routingRuleSchema } from "./routingRules";

/** Data domain and entity of the export (specification: EMPL data domain, CLS entity User). */
export const DATA_DOMAIN_CODE = "EMPL";
export const ENTITY_NAME = "User";

// ---------------------------------------------------------------------------------------------------------------
// Queue broker (Anypoint MQ Broker REST API v1 shape)

export const QUEUE_API = {
  /** Maximum messages in one batch publish. */
  maxBatchSize: 10,
  /** Largest request body the broker accepts. */
  maxBodyBytes: 10 * 1024 * 1024,
  /** Token lifetime; each use extends it. */
  tokenTtlSeconds: 60 * 60,
} as const;

/** The connection record's `url`: `{queue_base_url}/api/v1/organizations/`. */
export function queueOrganizationsUrl(baseUrl: string): string {
  return `${stripSlash(baseUrl)}/api/v1/organizations/`;
}
/** The connection record's authUrl: `{queue_base_url}/api/v1/authorize`. */
export function queueAuthUrl(baseUrl: string): string {
  return `${stripSlash(baseUrl)}/api/v1/authorize`;
}
/** `PUT` target for a batch; append `/{messageId}` for a single message. */
export function queueMessagesUrl(organizationsUrl: string, orgId: string, envId: string, queueName: string): string {
  const base = organizationsUrl.endsWith("/") ? organizationsUrl : organizationsUrl + "/";
  const [org, env, queue] = [orgId, envId, queueName].map(encodeURIComponent);
  return `${base}${org}/environments/${env}/destinations/${queue}/messages`;
}

/** A broker endpoint, from the decoded path segments after `{queue_base_url}`. */
export type QueuePath =
  | { endpoint: "authorize" }
  | { endpoint: "publish"; orgId: string; envId: string; queueName: string; messageId?: string };

/**
 * `["api", "v1", "authorize"]` → authorize; `["api", "v1", "organizations", org, "environments", env, "destinations",
 * queue, "messages"(, messageId)]` → publish (a batch, or one message; an empty messageId, a trailing slash, is
 * neither). Anything else: undefined.
 */
export function parseQueuePath(segments: readonly string[]): QueuePath | undefined {
  const [api, version, ...s] = segments;
  if (api !== "api" || version !== "v1") return undefined;
  if (s.length === 1 && s[0] === "authorize") return { endpoint: "authorize" };
  if (
    (s.length === 7 || s.length === 8) &&
    s[0] === "organizations" &&
    s[2] === "environments" &&
    s[4] === "destinations" &&
    s[6] === "messages"
  ) {
    if (s.length === 8 && s[7] === "") return undefined;
    const path = { endpoint: "publish" as const, orgId: s[1], envId: s[3], queueName: s[5] };
    return s.length === 8 ? { ...path, messageId: s[7] } : path;
  }
  return undefined;
}

/** `POST authUrl` answer. */
export const authorizeResponseSchema = z.object({
  access_token: z.string().min(1),
  simple_client: z.object({ orgId: z.string().min(1), envId: z.string().min(1) }),
  token_type: z.string(),
});

/** ASSUMED message properties. */
export const MESSAGE_PROPERTY_KEYS = [
  "transactionId",
  "tenantId",
  "systemCode",
  "dataDomainCode",
  "entityName",
  "recordCount",
] as const;
export type MessageProperties = Record<(typeof MESSAGE_PROPERTY_KEYS)[number], string>;

/** One message as published; `headers.messageId` is stable for the message's lifetime. */
export const queueMessageSchema = z.object({
  properties: z.record(z.string(), z.string()),
  headers: z.object({ messageId: z.string().min(1).max(256) }).catchall(z.string()),
  body: z.string(),
});
export type QueueMessage = z.infer<typeof queueMessageSchema>;

export const publishResultSchema = z.object({
  messageId: z.string(),
  status: z.enum(["successful", "failed"]),
  statusMessage: z.string(),
});
export type PublishResult = z.infer<typeof publishResultSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Hub APIs: cfg (specified), ERS and HRSYS (ASSUMED). All take `?tenantId=<uuid>` and `Authorization: Basic <credentials string>`.

export const HUB_API_NAMES = ["ERS", "CFG", "HRSYS"] as const;
export type HubApiName = (typeof HUB_API_NAMES)[number];

/**
 * ASSUMED: the largest request body a hub API takes (its real limit is not documented; the broker's is 10 MiB). ERS
 * requests are cut to stay within it (task/phases/ersStream.ts), the emulator answers 413 beyond it.
 */
export const HUB_API_MAX_BODY_BYTES = 10 * 1024 * 1024;

export const HUB_API_PATHS = {
  CFG: "routingRules",
  ERS: "entities",
  HRSYS: "intakeJobs",
} as const satisfies Record<HubApiName, string>;

/** `{api url}{path}?tenantId=<uuid>`; API URLs end in `/api/`. */
export function hubApiUrl(apiUrl: string, api: HubApiName, tenantId: string): string {
  return hubCallUrl(apiUrl, `${HUB_API_PATHS[api]}?tenantId=${TENANT_ID_PLACEHOLDER}`, tenantId);
}

// ---------------------------------------------------------------------------------------------------------------
// The assumed calls as a per-stack contract (stack config `hubExport:hubContract`, validated in config/schema.ts).
// These defaults are today's behaviour; docs/hub-contract.md lists every assumption with its default.

/** The one placeholder of a path template. */
export const TENANT_ID_PLACEHOLDER = "{tenantId}";

/** What a failing assumed call does: stop the run (resumable), or only record the failure and go on. */
export const FAILURE_MODES = ["stop", "record"] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

export interface AssumedCall {
  /** false: the call is never made. */
  enabled: boolean;
  /** Relative to the API's URL (which ends in /api/); `{tenantId}` is replaced by the tenant's id. */
  path: string;
  onFailure: FailureMode;
}

/** The queue message's assumed properties: sent or not, under which names, and what a refused message does. */
export interface QueueMessageContract {
  /** false: messages carry no properties (`{}`). */
  enabled: boolean;
  /** Our property → the name the hub expects. */
  names: Record<keyof MessageProperties, string>;
  /** A message the broker refuses for good: `record` it FAILED and go on (ExecutionFailed), or `stop` the run. */
  onFailure: FailureMode;
}

export interface HubContract {
  ers: AssumedCall;
  intakeReport: AssumedCall;
  queueMessage: QueueMessageContract;
}

/**
 * ERS stops a run when it fails (the specification sizes its requests: records_per_ers_request); the HRSYS intake report
 * is an assumption of ours, so by default its failure is only recorded and never keeps a run from completing.
 */
export const HUB_CONTRACT_DEFAULTS: HubContract = {
  ers: { enabled: true, path: `${HUB_API_PATHS.ERS}?tenantId=${TENANT_ID_PLACEHOLDER}`, onFailure: "stop" },
  intakeReport: {
    enabled: true,
    path: `${HUB_API_PATHS.HRSYS}?tenantId=${TENANT_ID_PLACEHOLDER}`,
    onFailure: "record",
  },
  queueMessage: {
    enabled: true,
    names: Object.fromEntries(MESSAGE_PROPERTY_KEYS.map((k) => [k, k])) as QueueMessageContract["names"],
    onFailure: "record",
  },
};

/** `{api url}` + the path template with the tenant id filled in. */
export function hubCallUrl(apiUrl: string, pathTemplate: string, tenantId: string): string {
  return apiUrl + pathTemplate.split(TENANT_ID_PLACEHOLDER).join(encodeURIComponent(tenantId));
}

/** The message's properties under the contract's names (none when disabled). */
export function contractProperties(
  properties: MessageProperties,
  contract: QueueMessageContract,
): Record<string, string> {
  if (!contract.enabled) return {};
  return Object.fromEntries(MESSAGE_PROPERTY_KEYS.map((k) => [contract.names[k], properties[k]]));
}

/** ASSUMED: the Basic header carries the credentials string as it is. */
export function basicAuthorization(credentialsString: string): string {
  return `Basic ${credentialsString}`;
}

export const routingRulesBodySchema = z.array(routingRuleSchema).min(1);

/**
 * ASSUMED: the cfg API lists a tenant's routing rules. `GET {cfg}routingRules?tenantId=<uuid>`, with the tenant's Basic
 * authorization, answers the rules the hub holds for the tenant as a JSON array of rule objects (all five fields). The
 * specification documents only the POST; a hub that answers 404 or 405 has no such read. Used to post only the missing
 * rules after an unclear answer, by `pulumi refresh` to see rules changed at the hub (providers/routingRules.ts: where
 * the hub lacks the read, refresh says once that drift cannot be seen), and by `hub-export probe`.
 */
export const ROUTING_RULES_LISTING = { method: "GET", api: "CFG", path: HUB_API_PATHS.CFG } as const;
/** Answers of a hub without the listing: the cfg API offers no read of routing rules. */
export const ROUTING_RULES_LISTING_ABSENT = [404, 405] as const;
export const routingRulesListingSchema = z.array(routingRuleSchema);

/** ASSUMED: the field that identifies an entity (the User's employee id); the emulator uses it to count re-sends. */
export const ERS_ENTITY_KEY = "UserId";

export const ersEntitiesBodySchema = z.strictObject({
  transactionId: z.string().min(1),
  systemCode: z.string().min(1),
  dataDomainCode: z.literal(DATA_DOMAIN_CODE),
  entityName: z.literal(ENTITY_NAME),
  // Each entity an object, checked without copying it (a record schema would copy every entity of every request).
  entities: z
    .array(
      z.custom<Record<string, unknown>>((v) => typeof v === "object" && v !== null && !Array.isArray(v), {
        message: "each entity must be a JSON object",
      }),
    )
    .min(1),
});

export const intakeJobBodySchema = z.strictObject({
  jobName: z.string().min(1),
  transactionId: z.string().min(1),
  systemCode: z.string().min(1),
  dataDomainCode: z.literal(DATA_DOMAIN_CODE),
  status: z.enum(["STARTED", "COMPLETED", "FAILED"]),
  counts: z.record(z.string(), z.number().int().nonnegative()),
});
export type IntakeJobBody = z.infer<typeof intakeJobBodySchema>;

/** Retry policy shared by every client: 429, 5xx and network errors are transient; 401 re-authorizes once. */
export function isTransientStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * A refusal of the message itself, which no retry of the same message can change: a 4xx other than 401 (credentials),
 * 403 (a destination refusing for now), 408 (a timeout) and 409 (a conflict) and 429. Runs that meet it count towards
 * setting the message aside (the parameter set_aside_after_runs); other failures are retried by every run.
 */
export function isPermanentRefusal(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
