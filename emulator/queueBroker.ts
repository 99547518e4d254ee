/**
 * The regional queue brokers (docs/hub-contract.md, Anypoint MQ Broker REST API v1 shape). All regions share the
 * emulator's port; each has its own base URL `/mq/{us|eu|apac}`, so a connection record's url is
 * `{base}/api/v1/organizations/` and its authUrl `{base}/api/v1/authorize`.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { QUEUE_API, queueMessageSchema, type PublishResult, type QueueMessage } from "../core/hubContract";
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import { QUEUE_NAME, type EmulatorConfig } from "./config";
import type { EmulatorStore } from "./state";
import { HttpError, describeIssues, parseJson, readBody, requireMediaType, safeEqual, type Reply } from "./http";

/** An authorize request is a short form; anything longer is not one. */
const AUTHORIZE_MAX_BODY_BYTES = 64 * 1024;

/** Region path segment → region: `/mq/us/...`. */
export const REGION_PATH: Record<HubRegion, string> = { US: "us", EU: "eu", APAC: "apac" };
export const REGION_BY_PATH = new Map(HUB_REGIONS.map((r) => [REGION_PATH[r], r] as const));

interface Token {
  region: HubRegion;
  expiresAt: number;
}

export class QueueBroker {
  private tokens = new Map<string, Token>();
  private readonly ttlMs: number;
  private readonly rejects: Set<string>;

  constructor(
    private readonly config: EmulatorConfig,
    private readonly store: EmulatorStore,
  ) {
    this.ttlMs = config.tokenTtlSeconds * 1000;
    this.rejects = new Set(config.rejectDestinations);
  }

  /** `POST authUrl` with a form of client_id, client_secret, grant_type=client_credentials. */
  async authorize(region: HubRegion, req: IncomingMessage): Promise<Reply> {
    requireMediaType(req, "application/x-www-form-urlencoded");
    const form = new URLSearchParams((await readBody(req, AUTHORIZE_MAX_BODY_BYTES)).toString("utf8"));
    const expected = this.config.queues[region];
    // Evaluate every comparison (no short circuit), so the answer time does not tell which field was wrong.
    const idOk = safeEqual(form.get("client_id") ?? "", expected.clientId);
    const secretOk = safeEqual(form.get("client_secret") ?? "", expected.clientSecret);
    const grantOk = form.get("grant_type") === "client_credentials";
    if (!(idOk && secretOk && grantOk)) throw new HttpError(401, "invalid client credentials or grant type");

    this.sweepExpired();
    const token = randomBytes(24).toString("base64url");
    this.tokens.set(token, { region, expiresAt: Date.now() + this.ttlMs });
    return {
      status: 200,
      body: {
        access_token: token,
        simple_client: { orgId: expected.orgId, envId: expected.envId },
        token_type: "bearer",
      },
    };
  }

  /**
   * `PUT {url}{orgId}/environments/{envId}/destinations/{queueName}/messages[/{messageId}]`: one message, or a batch
   * of 1 to QUEUE_API.maxBatchSize. `expireToken` is the fault injector's verdict that this valid token has expired.
   */
  async publish(
    region: HubRegion,
    path: { orgId: string; envId: string; queueName: string; messageId?: string },
    req: IncomingMessage,
    expireToken: boolean,
    /** The region's rate limit in messages: takes a batch's count, or throws 429. */
    admit: (messages: number) => void = () => {},
  ): Promise<Reply> {
    this.authenticate(region, req, expireToken);
    const expected = this.config.queues[region];
    if (path.orgId !== expected.orgId || path.envId !== expected.envId)
      throw new HttpError(404, "unknown organization or environment");
    if (
      !QUEUE_NAME.test(path.queueName) ||
      (expected.destinations && !expected.destinations.includes(path.queueName))
    ) {
      throw new HttpError(404, "unknown destination");
    }
    requireMediaType(req, "application/json");
    const body = parseJson(await readBody(req, QUEUE_API.maxBodyBytes));
    const reject = this.rejects.has(path.queueName);

    if (path.messageId !== undefined) {
      const message = validateMessage(body, "");
      if (message.headers.messageId !== path.messageId)
        throw new HttpError(400, "headers.messageId must equal the messageId in the path");
      admit(1);
      const result = this.store1(region, path.queueName, message, reject);
      return { status: reject ? 403 : 201, body: result };
    }

    if (!Array.isArray(body)) throw new HttpError(400, "a batch must be a JSON array of messages");
    if (body.length < 1 || body.length > QUEUE_API.maxBatchSize) {
      throw new HttpError(400, `a batch holds 1 to ${QUEUE_API.maxBatchSize} messages, got ${body.length}`);
    }
    const messages = body.map((item, i) => validateMessage(item, `[${i}]`));
    const seen = new Set<string>();
    for (const m of messages) {
      if (seen.has(m.headers.messageId))
        throw new HttpError(400, `messageId '${m.headers.messageId}' appears twice in the batch`);
      seen.add(m.headers.messageId);
    }
    admit(messages.length);
    return { status: 201, body: messages.map((m) => this.store1(region, path.queueName, m, reject)) };
  }

  private store1(region: HubRegion, queueName: string, message: QueueMessage, reject: boolean): PublishResult {
    const { messageId } = message.headers;
    const outcome = this.store.publish(region, queueName, messageId, message.properties, message.body, reject);
    if (outcome === "rejected") return { messageId, status: "failed", statusMessage: "destination rejects messages" };
    // A standard queue answers a republish like any publish; only a deduplicating one says it kept the first.
    return {
      messageId,
      status: "successful",
      statusMessage:
        outcome === "duplicate" && this.config.deduplicate ? "duplicate messageId; already stored" : "queued",
    };
  }

  /** Checks `Authorization: bearer <token>`; a valid token's lifetime is extended on every use. */
  private authenticate(region: HubRegion, req: IncomingMessage, expireToken: boolean): void {
    const match = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    if (!match) throw new HttpError(401, "missing bearer token", { "www-authenticate": "Bearer" });
    const token = this.tokens.get(match[1]);
    const now = Date.now();
    if (!token || token.region !== region)
      throw new HttpError(401, "unknown token", { "www-authenticate": 'Bearer error="invalid_token"' });
    if (token.expiresAt <= now || expireToken) {
      this.tokens.delete(match[1]);
      throw new HttpError(401, "token expired", { "www-authenticate": 'Bearer error="invalid_token"' });
    }
    token.expiresAt = now + this.ttlMs;
  }

  /** Drops expired tokens once the table grows, so a long run of authorizations cannot grow it without bound. */
  private sweepExpired(): void {
    if (this.tokens.size < 1024) return;
    const now = Date.now();
    for (const [key, token] of this.tokens) if (token.expiresAt <= now) this.tokens.delete(key);
  }
}

function validateMessage(value: unknown, at: string): QueueMessage {
  const parsed = queueMessageSchema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, `invalid message: ${describeIssues(parsed.error.issues, at)}`);
  return parsed.data;
}
