/**
 * The queue broker client of one hub destination (docs/hub-contract.md): authorize, then publish batches of up to 10.
 * A 401 re-authorizes; 429, 5xx, network errors and the deadline retry with the same messageIds within the request's
 * budget; other 4xx are permanent (a batch of several is retried message by message, to find the bad one).
 */
import {
  QUEUE_API,
  authorizeResponseSchema,
  isPermanentRefusal,
  isTransientStatus,
  publishResultSchema,
  queueMessagesUrl,
} from "../../core/hubContract";
import { maskSecret, redact } from "../../core/redact";
import type { QueueEndpoint } from "../connections/record";
import { answerText, describeRequestError, parseJson } from "../http/retry";
import { Attempts, isPermanentRequestError, type Answer, type HubHttp } from "../http/client";
import { UNLIMITED, type RequestGate } from "../http/concurrency";
import type { Breaker } from "../http/breaker";
import { RunStopped } from "../stop";
import { jsonArrayBody } from "../http/utf8Body";
import { z } from "zod";

/** A message ready to send: its JSON text, as the broker takes it, in UTF-8. */
export interface OutgoingMessage {
  messageId: string;
  /** `{"properties":...,"headers":{"messageId":...},"body":"..."}` */
  json: Buffer;
}

export interface MessageOutcome {
  messageId: string;
  published: boolean;
  /** Why it failed (published false). */
  reason?: string;
  /** HTTP attempts made for it in this run. */
  attempts: number;
  /** Refused for good (over the size limit, or isPermanentRefusal): counts towards setting it aside. */
  permanent?: boolean;
}

interface Session {
  token: string;
  orgId: string;
  envId: string;
}

const batchAnswerSchema = z.array(publishResultSchema);

export class QueueBroker {
  /** The authorization in progress or done, shared by concurrent callers; it never rejects unobserved (see authorize). */
  private session?: Promise<Session>;
  /** The session it resolved to, so that an expired one is told apart synchronously. */
  private current?: Session;
  /** Set when the broker refused the credentials: every later batch fails at once with this reason. */
  private refused?: string;
  /** Re-authorizations after a 401, for the run's log. */
  reauthorizations = 0;

  constructor(
    readonly endpoint: QueueEndpoint,
    private readonly http: HubHttp,
    /** Every publish request passes it: the adaptive concurrency of the region's queue link. */
    private readonly gate: RequestGate = UNLIMITED,
    /** The region's queue link's breaker: publish requests are its work, the authorize an auxiliary request. */
    private readonly breaker?: Breaker,
  ) {}

  /** Publishes one batch (1 to 10 messages, within the body limit) and returns every message's outcome. */
  async publish(batch: OutgoingMessage[]): Promise<MessageOutcome[]> {
    const outcome = await this.publishBatch(batch);
    if (outcome.kind === "results") return outcome.results;
    if (outcome.kind === "rejected" && batch.length > 1) {
      // A permanent answer for the whole batch: find out which messages it is about.
      const singles = await Promise.all(batch.map((m) => this.publishBatch([m])));
      return singles.flatMap((o, i) =>
        o.kind === "results" ? o.results : [failed(batch[i], o.reason, o.attempts + outcome.attempts, permanentOf(o))],
      );
    }
    return batch.map((m) => failed(m, outcome.reason, outcome.attempts, batch.length === 1 && permanentOf(outcome)));
  }

  private async publishBatch(
    batch: OutgoingMessage[],
  ): Promise<
    | { kind: "results"; results: MessageOutcome[] }
    | { kind: "rejected" | "gaveUp"; reason: string; attempts: number; status?: number }
  > {
    const body = batch.length === 1 ? batch[0].json : jsonArrayBody(batch.map((m) => m.json));
    let lastReason = "not attempted";
    const attempts = new Attempts(this.http, this.breaker);
    while (attempts.next()) {
      const attempt = attempts.attempt;
      if (this.refused) return { kind: "rejected", reason: this.refused, attempts: attempt - 1 };
      let session: Session;
      try {
        session = await this.authorize();
      } catch (err) {
        if (err instanceof RunStopped) throw err;
        if (this.refused) return { kind: "rejected", reason: this.refused, attempts: attempt };
        lastReason = `authorize: ${(err as Error).message}`;
        await attempts.backoff();
        continue;
      }
      const url =
        queueMessagesUrl(this.endpoint.organizationsUrl, session.orgId, session.envId, this.endpoint.queueName) +
        (batch.length === 1 ? `/${encodeURIComponent(batch[0].messageId)}` : "");
      let answer: Answer;
      try {
        answer = await this.http.send(
          {
            ...target(url),
            method: "PUT",
            headers: { authorization: `bearer ${session.token}`, "content-type": "application/json" },
            body,
          },
          this.gate,
          this.breaker,
        );
      } catch (err) {
        if (err instanceof RunStopped) throw err;
        lastReason = describeRequestError(err);
        if (isPermanentRequestError(err)) return { kind: "rejected", reason: lastReason, attempts: attempt };
        await attempts.backoff();
        continue;
      }
      const { status, text, retryAfter } = answer;
      if (status === 201 || status === 200) {
        const results = parseResults(text, batch);
        if (results) return { kind: "results", results: results.map((r) => ({ ...r, attempts: attempt })) };
        return {
          kind: "rejected",
          reason: `unexpected answer to the publish (HTTP ${status}): ${answerText(text)}`,
          attempts: attempt,
        };
      }
      lastReason = `HTTP ${status}: ${answerText(text)}`;
      if (status === 401) {
        // The token expired: forget it, authorize again, retry (this attempt counts).
        this.expire(session);
        this.reauthorizations++;
        continue;
      }
      if (isTransientStatus(status)) {
        await attempts.backoff(retryAfter);
        continue;
      }
      return { kind: "rejected", reason: lastReason, attempts: attempt, status };
    }
    return { kind: "gaveUp", reason: `gave up ${attempts.describe()}: ${lastReason}`, attempts: attempts.attempt };
  }

  /** The current session, authorizing once for all concurrent callers. */
  private authorize(): Promise<Session> {
    this.session ??= this.requestToken().then(
      (s) => (this.current = s),
      (err) => {
        this.session = undefined;
        throw err;
      },
    );
    return this.session;
  }

  /**
   * Forgets a session the broker called expired, unless another caller already replaced it. Decided synchronously:
   * a callback on the shared promise would reject unobserved when the re-authorization fails (a 503 at that moment
   * once ended the process through an unhandled rejection).
   */
  private expire(used: Session): void {
    if (this.current !== used) return;
    this.current = undefined;
    this.session = undefined;
  }

  private async requestToken(): Promise<Session> {
    let answer: Answer;
    try {
      answer = await this.http.send(
        {
          ...target(this.endpoint.authUrl),
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: authorizeForm(this.endpoint),
        },
        UNLIMITED,
        this.breaker?.auxiliary,
      );
    } catch (err) {
      if (err instanceof RunStopped) throw err;
      // An answer too long is no token, and never will be in this run: every batch fails with the reason.
      if (isPermanentRequestError(err))
        this.refused = `queue connection ${this.endpoint.connection}: authorize: ${describeRequestError(err)}`;
      throw new Error(this.refused ?? describeRequestError(err), { cause: err });
    }
    const { status, text } = answer;
    if (status === 401 || status === 403) {
      this.refused = `queue connection ${this.endpoint.connection}: the broker refused the client credentials (HTTP ${status})`;
      throw new Error(this.refused);
    }
    if (status !== 200) throw new Error(`HTTP ${status}: ${answerText(text)}`);
    const doc = parseJson(text);
    if (doc === undefined) throw new Error("the authorize answer is not JSON");
    const parsed = authorizeResponseSchema.safeParse(doc);
    if (!parsed.success) throw new Error("the authorize answer lacks access_token or simple_client");
    const { access_token: token, simple_client: client } = parsed.data;
    // The token is a secret like the client secret: a hub that echoes it shows [secret].
    maskSecret(token);
    return { token, orgId: client.orgId, envId: client.envId };
  }
}

/** The broker's authorize request: the client credentials grant. */
export function authorizeForm(q: QueueEndpoint): string {
  return new URLSearchParams({
    client_id: q.clientId,
    client_secret: q.clientSecret,
    grant_type: "client_credentials",
  }).toString();
}

/** A message over the broker's body limit is never sent: a permanent refusal. */
export function tooLarge(message: OutgoingMessage): MessageOutcome | undefined {
  const bytes = message.json.length;
  // One attempt, refused before it is sent (the broker's limit): a message set aside after N runs shows N attempts.
  return bytes > QUEUE_API.maxBodyBytes
    ? failed(message, `message body of ${bytes} bytes exceeds the broker's limit of ${QUEUE_API.maxBodyBytes}`, 1, true)
    : undefined;
}

function failed(m: OutgoingMessage, reason: string, attempts: number, permanent = false): MessageOutcome {
  return permanent
    ? { messageId: m.messageId, published: false, reason, attempts, permanent }
    : { messageId: m.messageId, published: false, reason, attempts };
}

/** Whether a refused single message was refused for good. */
function permanentOf(outcome: { kind: string; status?: number }): boolean {
  return outcome.kind === "rejected" && outcome.status !== undefined && isPermanentRefusal(outcome.status);
}

/** Per-message results of a batch (an array) or of a single publish (one object); undefined if they do not match. */
function parseResults(text: string, batch: OutgoingMessage[]): Omit<MessageOutcome, "attempts">[] | undefined {
  const doc = parseJson(text);
  if (doc === undefined) return undefined;
  const parsed = batchAnswerSchema.safeParse(Array.isArray(doc) ? doc : [doc]);
  if (!parsed.success) return undefined;
  const byId = new Map(parsed.data.map((r) => [r.messageId, r]));
  return batch.map((m) => {
    const r = byId.get(m.messageId);
    if (!r)
      return { messageId: m.messageId, published: false, reason: "the broker's answer does not mention this message" };
    return r.status === "successful"
      ? { messageId: m.messageId, published: true }
      : { messageId: m.messageId, published: false, reason: `broker: ${redact(r.statusMessage).slice(0, 300)}` };
  });
}

/** undici wants origin and path apart. */
export function target(url: string): { origin: string; path: string } {
  const u = new URL(url);
  return { origin: u.origin, path: u.pathname + u.search };
}
