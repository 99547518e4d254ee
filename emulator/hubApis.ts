/**
 * The hub's cfg, ERS and HRSYS APIs (docs/hub-contract.md). Each takes `?tenantId=<uuid>` and
 * `Authorization: Basic <credentials string>`, checked against the tenant's configured credentials.
 */
import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import { decodeCredentialsString } from "../core/credentials";
import {
  ERS_ENTITY_KEY,
  HUB_API_MAX_BODY_BYTES,
  ersEntitiesBodySchema,
  intakeJobBodySchema,
  routingRulesBodySchema,
  routingRulesListingSchema,
} from "../core/hubContract";
import type { EmulatorConfig, TenantConfig } from "./config";
import { ruleKey, type EmulatorStore } from "./state";
import { HttpError, describeIssues, parseJson, readBody, requireMediaType, safeEqual, type Reply } from "./http";
import { UUID } from "../core/uuid";

const CHALLENGE = { "www-authenticate": 'Basic realm="hub"' };

export class HubApis {
  /** Tenant ids compare case-insensitively; state is keyed by the lower-case id. */
  private readonly tenants: Map<string, TenantConfig>;

  constructor(
    private readonly config: EmulatorConfig,
    private readonly store: EmulatorStore,
  ) {
    this.tenants = new Map(Object.entries(config.tenants).map(([id, t]) => [id.toLowerCase(), t]));
  }

  /** `POST {CFG}routingRules`: merges the set into the tenant's rows (same set → no change). */
  async postRoutingRules(req: IncomingMessage, query: URLSearchParams): Promise<Reply> {
    const tenantId = this.authenticate(req, query);
    const rules = await readJson(req, routingRulesBodySchema, "routing rules");
    const keys = new Set<string>();
    rules.forEach((rule, i) => {
      const key = ruleKey(rule);
      if (keys.has(key))
        throw new HttpError(
          400,
          `[${i}]: the set holds this rule twice (same dataDomainCode, isDataMastered, source and target)`,
        );
      keys.add(key);
    });
    return { status: 200, body: { tenantId, ...this.store.postRules(tenantId, rules) } };
  }

  /** `GET {CFG}routingRules`: the tenant's rows (the ASSUMED listing, core/hubContract.ts ROUTING_RULES_LISTING). */
  async getRoutingRules(req: IncomingMessage, query: URLSearchParams): Promise<Reply> {
    const tenantId = this.authenticate(req, query);
    return { status: 200, body: routingRulesListingSchema.parse(this.store.rulesOf(tenantId)) };
  }

  /** `POST {ERS}entities`: at most ersMaxBatch entities; a larger batch is 413, like any oversized request. */
  async postEntities(req: IncomingMessage, query: URLSearchParams): Promise<Reply> {
    const tenantId = this.authenticate(req, query);
    const { transactionId, entities } = await readJson(req, ersEntitiesBodySchema, "entities request");
    if (entities.length > this.config.ersMaxBatch) {
      throw new HttpError(
        413,
        `entities holds ${entities.length} items; at most ${this.config.ersMaxBatch} are accepted per request`,
      );
    }
    const keys = entities.flatMap((e) =>
      e[ERS_ENTITY_KEY] === undefined || e[ERS_ENTITY_KEY] === null
        ? []
        : // eslint-disable-next-line @typescript-eslint/no-base-to-string -- any JSON value: recorded as its text
          [String(e[ERS_ENTITY_KEY])],
    );
    this.store.recordEntities(tenantId, transactionId, entities.length, keys);
    return { status: 200, body: { transactionId, accepted: entities.length } };
  }

  /** `POST {HRSYS}intakeJobs`: records the job's status report. */
  async postIntakeJob(req: IncomingMessage, query: URLSearchParams): Promise<Reply> {
    const tenantId = this.authenticate(req, query);
    const job = await readJson(req, intakeJobBodySchema, "intake job");
    this.store.recordIntakeJob({ tenantId, receivedAt: new Date().toISOString(), ...job });
    const { jobName, transactionId, status } = job;
    return { status: 201, body: { tenantId, jobName, transactionId, status } };
  }

  /**
   * tenantId must be a UUID (400 otherwise); the Basic credentials string must decode and match that tenant's
   * clientId and clientSecret (401 otherwise, also for an unknown tenant, so that tenant ids cannot be probed).
   */
  private authenticate(req: IncomingMessage, query: URLSearchParams): string {
    const ids = query.getAll("tenantId");
    if (ids.length !== 1 || ids[0] === "") throw new HttpError(400, "the query parameter tenantId is required, once");
    if (!UUID.test(ids[0])) throw new HttpError(400, "tenantId must be a UUID (8-4-4-4-12 hex digits)");
    const tenantId = ids[0].toLowerCase();

    const match = /^basic\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    if (!match) throw new HttpError(401, "missing Basic authorization", CHALLENGE);
    let given: { clientId: string; clientSecret: string };
    try {
      given = decodeCredentialsString(match[1]);
    } catch {
      throw new HttpError(401, "the Basic authorization is not a valid credentials string", CHALLENGE);
    }
    // An unknown tenant is compared against a dummy, so that it costs the same time as a wrong secret.
    const expected = this.tenants.get(tenantId) ?? { clientId: "\0", clientSecret: "\0" };
    const idOk = safeEqual(given.clientId, expected.clientId);
    const secretOk = safeEqual(given.clientSecret, expected.clientSecret);
    if (!(idOk && secretOk && this.tenants.has(tenantId)))
      throw new HttpError(401, "credentials do not match the tenant", CHALLENGE);
    return tenantId;
  }
}

/** The JSON body, validated: a body the schema refuses is 400 `invalid <what>: <issues>`. */
async function readJson<T>(req: IncomingMessage, schema: z.ZodType<T>, what: string): Promise<T> {
  requireMediaType(req, "application/json");
  const parsed = schema.safeParse(parseJson(await readBody(req, HUB_API_MAX_BODY_BYTES)));
  if (!parsed.success) throw new HttpError(400, `invalid ${what}: ${describeIssues(parsed.error.issues)}`);
  return parsed.data;
}
