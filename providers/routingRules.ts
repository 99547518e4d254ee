/**
 * Hub routing rules: `postRoutingRules`, used by local mode too, and the dynamic provider behind
 * components/hub/routingRuleSet.ts. The cfg API request of core/hubContract.ts is re-implemented here (provider code
 * cannot load project modules, providers/README.md); test/providers/routingRules.test.ts keeps the two equal.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import * as redact from "../core/redact";
import * as retry from "../core/retry";
import type { RetryPolicy } from "../core/retry";
import * as routingRules from "../core/routingRules";
import type { RoutingRule } from "../core/routingRules";
import * as refusals from "./refusal";
import * as json from "./json";

const { backoffMs } = retry;
/** Serialized with the provider, it carries no masked secret along. */
const { redactSecrets: scrub } = redact;
const { canonicalRuleSet, routingRulesHash } = routingRules;
const { refusal } = refusals;
const { pick } = json;
/** POSTs of one set: 3 by default (a request's `attempts`), 0.5 s doubling up to 8 s between them. */
const RETRY: RetryPolicy = { attempts: 3, baseMs: 500, maxMs: 8_000 };

/** Bump when posting behaves differently, so that `pulumi up` posts every tenant's set again. */
export const ROUTING_RULES_PROVIDER_VERSION = 1;

export interface PostRoutingRulesRequest {
  /** The CFG API URL, ending in /api/. */
  cfgApiUrl: string;
  tenantId: string;
  /** Sent as it is in `Authorization: Basic`; never logged. */
  credentialsString: string;
  rules: RoutingRule[];
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** POSTs at most: repeated where the hub did not process one, or for the rules still missing after one; default 3. */
  attempts?: number;
}

export interface PostRoutingRulesResult {
  status: number;
  attempts: number;
  /** Rules in the last POST: fewer than the set when some were found on the hub after an unclear answer. */
  posted: number;
}

export interface RoutingRuleSetState {
  cfgApiUrl: string;
  tenantId: string;
  credentialsString: string;
  rules: RoutingRule[];
  /** sha256 of the canonical rule set: what the diff looks at. */
  rulesHash: string;
  version: number;
  /** Outputs only. */
  ruleCount?: number;
  postedAt?: string;
}

/** `{cfg}routingRules?tenantId=<id>`, as core/hubContract.ts hubApiUrl(cfg, "CFG", id). */
export function routingRulesUrl(cfgApiUrl: string, tenantId: string): string {
  return `${cfgApiUrl}routingRules?tenantId=${encodeURIComponent(tenantId)}`;
}

/** The longest answer read (an error's excerpt, the rules read back); the rest of the stream is cancelled. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A short, single-line excerpt of a response body: redacted (the credentials string, control characters). */
function bodyExcerpt(body: string, credentialsString: string): string {
  const text = scrub(body.replace(/\s+/g, " ").trim(), [credentialsString]);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** An answer's text up to MAX_ANSWER_BYTES; `cut` when there was more (the stream is cancelled). */
async function readCapped(response: Response): Promise<{ text: string; cut: boolean }> {
  const reader = (response.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return { text: "", cut: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      return { text: Buffer.concat(chunks).toString("utf8"), cut: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString("utf8"), cut: false };
}

/**
 * What became of one POST: `ok`; `notProcessed` (429, 503 with Retry-After, a connection never made: the hub certainly
 * did not store the set, a retry is safe); `unknown` (a timeout, another 5xx, a connection lost after sending: the hub
 * may hold the set); `refused` (another answer).
 */
type PostOutcome =
  | { kind: "ok"; status: number }
  | { kind: "notProcessed"; problem: string; retryAfter?: string | null }
  | { kind: "unknown"; problem: string }
  | { kind: "refused"; problem: string };

/** Network errors before the request reached the hub. */
const NOT_CONNECTED = [
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
];

async function postOnce(
  url: string,
  request: PostRoutingRulesRequest,
  rules: readonly RoutingRule[],
  timeoutMs: number,
): Promise<PostOutcome> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: {
        Authorization: `Basic ${request.credentialsString}`,
        "Content-Type": "application/json",
        Accept: "application/json",
      },
      body: canonicalRuleSet(rules),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === "TimeoutError") return { kind: "unknown", problem: `no answer within ${timeoutMs} ms` };
    const problem = `network error (${scrub(e.cause?.code ?? e.cause?.message ?? e.message, [request.credentialsString])})`;
    return NOT_CONNECTED.includes(e.cause?.code ?? "")
      ? { kind: "notProcessed", problem }
      : { kind: "unknown", problem };
  }
  if (response.ok) {
    await response.body?.cancel().catch(() => {});
    return { kind: "ok", status: response.status };
  }
  let problem = `HTTP ${response.status}${response.statusText ? ` ${scrub(response.statusText, [])}` : ""}`;
  try {
    const { text, cut } = await readCapped(response);
    if (text) problem += `: ${bodyExcerpt(text, request.credentialsString)}${cut ? " (answer cut off)" : ""}`;
  } catch {
    // the excerpt is a courtesy
  }
  const retryAfter = response.headers.get("retry-after");
  if (response.status === 429 || (response.status === 503 && retryAfter))
    return { kind: "notProcessed", problem, retryAfter };
  return response.status >= 500 ? { kind: "unknown", problem } : { kind: "refused", problem };
}

/** Answers of a cfg API without the listing (core/hubContract.ts ROUTING_RULES_LISTING_ABSENT). */
export const NO_LISTING_STATUSES: readonly number[] = [404, 405];

/**
 * The tenant's rules as the hub holds them (ASSUMED listing, core/hubContract.ts ROUTING_RULES_LISTING: `GET
 * routingRules?tenantId=` answers them), or why not; `noListing` when the cfg API has no such read.
 */
async function readRules(
  url: string,
  request: Pick<PostRoutingRulesRequest, "credentialsString">,
  timeoutMs: number,
): Promise<{ rules: RoutingRule[] } | { problem: string; noListing?: boolean }> {
  try {
    const response = await fetch(url, {
      headers: { Authorization: `Basic ${request.credentialsString}`, Accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const { text, cut } = await readCapped(response);
    if (NO_LISTING_STATUSES.includes(response.status))
      return { problem: `the cfg API offers no read of routing rules (HTTP ${response.status})`, noListing: true };
    if (!response.ok)
      return {
        problem: `reading them back answered HTTP ${response.status}: ${bodyExcerpt(text, request.credentialsString)}`,
      };
    if (cut) return { problem: `reading them back gave an answer longer than ${MAX_ANSWER_BYTES / 1024} KiB` };
    const doc = JSON.parse(text) as unknown;
    if (!Array.isArray(doc)) return { problem: "reading them back did not give a JSON array" };
    return { rules: doc as RoutingRule[] };
  } catch (err) {
    const e = err as Error;
    return {
      problem: `reading them back failed: ${e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : scrub(e.message, [request.credentialsString])}`,
    };
  }
}

/** The rules of `wanted` the hub does not hold as they are (all five fields compared). */
function missingRules(wanted: readonly RoutingRule[], held: readonly RoutingRule[]): RoutingRule[] {
  const key = (r: RoutingRule) => canonicalRuleSet([r]);
  const have = new Set(held.map(key));
  return wanted.filter((r) => !have.has(key(r)));
}

/**
 * POSTs the tenant's rule set. The POST is not known to be idempotent, so it is repeated only where the hub certainly
 * did not process it (429, 503 with Retry-After, a connection never made). After a timeout or another 5xx the
 * tenant's rules are read back and only the missing ones are posted; where they cannot be read back, it stops with a
 * message saying the hub may hold the set already. Throws otherwise.
 */
export async function postRoutingRules(request: PostRoutingRulesRequest): Promise<PostRoutingRulesResult> {
  const attempts = Math.max(1, request.attempts ?? RETRY.attempts);
  const timeoutMs = request.timeoutMs ?? 30_000;
  const url = routingRulesUrl(request.cfgApiUrl, request.tenantId);
  const what = `cfg API POST routingRules for tenant ${request.tenantId}`;
  let pending: readonly RoutingRule[] = request.rules;
  let lastProblem = "";
  let retryAfter: string | null | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt - 1, RETRY, retryAfter)));
    const outcome = await postOnce(url, request, pending, timeoutMs);
    if (outcome.kind === "ok") return { status: outcome.status, attempts: attempt, posted: pending.length };
    if (outcome.kind === "refused") throw refusal(`${what} failed: ${outcome.problem}`);
    lastProblem = outcome.problem;
    retryAfter = outcome.kind === "notProcessed" ? outcome.retryAfter : undefined;
    if (outcome.kind === "unknown") {
      const read = await readRules(url, request, timeoutMs);
      if ("problem" in read) {
        throw refusal(
          `${what}: ${lastProblem}; the hub may hold the set already, and ${read.problem}: check the tenant's routing rules on the hub before posting again (pulumi up)`,
        );
      }
      pending = missingRules(request.rules, read.rules);
      if (pending.length === 0) return { status: 200, attempts: attempt, posted: 0 };
    }
  }
  throw refusal(
    `${what} failed after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${lastProblem}; check the hub (hub-export probe), then run again`,
  );
}

function ruleSetState(inputs: RoutingRuleSetState, posted: { postedAt?: string }): RoutingRuleSetState {
  return {
    ...pick(inputs, ["cfgApiUrl", "tenantId", "credentialsString", "rules", "rulesHash", "version"]),
    ruleCount: Array.isArray(inputs.rules) ? inputs.rules.length : 0,
    ...(posted.postedAt ? { postedAt: posted.postedAt } : {}),
  };
}

/** Said once per provider process (one `pulumi refresh`), not once per tenant. */
function warnOnce(key: string, message: string): void {
  const said = ((globalThis as Record<symbol, unknown>)[Symbol.for("hub-export.routing-rules-warnings")] ??=
    new Set<string>()) as Set<string>;
  if (said.has(key)) return;
  said.add(key);
  process.stderr.write(`${message}\n`);
}

/** The set must reach the hub again: other rules, another cfg API, other provider behaviour. */
function needsPost(olds: RoutingRuleSetState, news: RoutingRuleSetState): boolean {
  return olds.rulesHash !== news.rulesHash || olds.cfgApiUrl !== news.cfgApiUrl || olds.version !== news.version;
}

/**
 * The dynamic provider. An unchanged set is not posted again (diff on the canonical hash); a changed set is posted
 * (update); another tenant replaces the resource. Delete leaves the hub's rows in place: the cfg API has no delete.
 */
export const routingRulesProvider: dynamic.ResourceProvider<RoutingRuleSetState, RoutingRuleSetState> = {
  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (typeof news.cfgApiUrl !== "string" || !/^https?:\/\/.+\/api\/$/.test(news.cfgApiUrl))
      failures.push({ property: "cfgApiUrl", reason: "must be an http(s) URL ending in /api/" });
    if (
      typeof news.tenantId !== "string" ||
      !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(news.tenantId)
    ) {
      failures.push({ property: "tenantId", reason: "must be a UUID" });
    }
    if (typeof news.credentialsString !== "string" || news.credentialsString === "")
      failures.push({ property: "credentialsString", reason: "is required" });
    if (!Array.isArray(news.rules) || news.rules.length === 0)
      failures.push({ property: "rules", reason: "must hold at least one rule" });
    else if (news.rulesHash !== routingRulesHash(news.rules))
      failures.push({ property: "rulesHash", reason: "is not the hash of the canonical rule set" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const replaces = String(olds.tenantId).toLowerCase() !== String(news.tenantId).toLowerCase() ? ["tenantId"] : [];
    const changes = replaces.length > 0 || needsPost(olds, news) || olds.credentialsString !== news.credentialsString;
    return { changes, replaces };
  },

  async create(inputs) {
    await postRoutingRules(inputs);
    return {
      id: String(inputs.tenantId).toLowerCase(),
      outs: ruleSetState(inputs, { postedAt: new Date().toISOString() }),
    };
  },

  /**
   * `pulumi refresh`: the tenant's rules as the hub lists them. Rules of the set the hub no longer holds as they are
   * (changed or removed at the hub) leave the state's set, so the next `up` posts the set again; rules the hub holds
   * besides (another pipeline's, or ones this stack no longer posts) are not this resource's. Where the hub has no
   * listing, or answers what cannot be used (401, 403, 5xx, no answer, not a JSON array), drift cannot be seen: said
   * once per cfg API, and the state is returned as it is, so one hub's answer never fails the stack's refresh. The
   * credentials string stays under its own key, so the engine keeps it secret (it re-marks a property secret when the
   * old state's was).
   */
  async read(id, props) {
    if (!props) return { id };
    const read = await readRules(routingRulesUrl(props.cfgApiUrl, props.tenantId), props, 30_000);
    if ("problem" in read) {
      const keeps =
        "it keeps the state of the last post (the next up posts a set only when the configured one changes)";
      warnOnce(
        `${read.noListing ? "no listing" : "unusable"} ${props.cfgApiUrl}`,
        read.noListing
          ? `hub routing rules at ${props.cfgApiUrl}: ${read.problem}, so pulumi refresh cannot see rules changed at the hub; ${keeps}`
          : `hub routing rules at ${props.cfgApiUrl} (tenant ${props.tenantId}): ${read.problem}, so pulumi refresh cannot see rules changed at the hub; ${keeps}; check the tenant's credentials and the hub (hub-export probe)`,
      );
      return { id, props, inputs: props };
    }
    const held = Array.isArray(props.rules)
      ? props.rules.filter((r) => missingRules([r], read.rules).length === 0)
      : [];
    if (held.length === (props.rules ?? []).length) return { id, props, inputs: props };
    const state = { ...props, rules: held, rulesHash: routingRulesHash(held), ruleCount: held.length };
    const { ruleCount: _count, postedAt: _posted, ...inputs } = state;
    return { id, props: state, inputs: inputs };
  },

  async update(_id, olds, news) {
    // Only the credentials changed: the hub already has this set, nothing to post.
    if (!needsPost(olds, news)) return { outs: ruleSetState(news, { postedAt: olds.postedAt }) };
    await postRoutingRules(news);
    return { outs: ruleSetState(news, { postedAt: new Date().toISOString() }) };
  },

  async delete(_id, props) {
    // No API removes routing rules; the engine shows provider stderr in its logs (pulumi.log is not available here).
    process.stderr.write(
      `hub routing rules of tenant ${props.tenantId} were left in place: the cfg API has no delete. Ask the hub team to remove them from cfg_routing_rule if the tenant is gone.\n`,
    );
  },
};
