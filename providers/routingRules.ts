/**
 * Hub routing rules (hub-side configuration, "Endpoints"): `postRoutingRules`, used by local mode too, and the
 * dynamic provider behind components/hub/routingRuleSet.ts.
 *
 * The request is the cfg API contract of core/hubContract.ts (hubApiUrl, basicAuthorization), re-implemented here
 * because serialized provider code cannot load project modules; test/providers/routingRules.test.ts keeps the two
 * equal. Serialization rules as in providers/sqlRows.ts.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";

/** Bump when posting behaves differently, so that `pulumi up` posts every tenant's set again. */
export const ROUTING_RULES_PROVIDER_VERSION = 1;

/** One cfg_routing_rule object; all five fields are sent. */
export interface RoutingRuleBody {
  dataDomainCode: string;
  isDataMastered: number;
  systemRoleCodeSource: string;
  systemRoleCodeTarget: string;
  status: number;
}

export interface PostRoutingRulesRequest {
  /** The CFG API URL, ending in /api/. */
  cfgApiUrl: string;
  tenantId: string;
  /** Sent as it is in `Authorization: Basic`; never logged. */
  credentialsString: string;
  rules: RoutingRuleBody[];
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Attempts for 429, 5xx and network errors (a repeated POST of the same set stores nothing new); default 3. */
  attempts?: number;
}

export interface PostRoutingRulesResult {
  status: number;
  attempts: number;
}

export interface RoutingRuleSetState {
  cfgApiUrl: string;
  tenantId: string;
  credentialsString: string;
  rules: RoutingRuleBody[];
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

/** The rule set with its fields in a fixed order, as core/routingRules.ts canonicalRuleSet. */
export function canonicalRules(rules: readonly RoutingRuleBody[]): string {
  return JSON.stringify(
    rules.map((r) => ({
      dataDomainCode: r.dataDomainCode,
      isDataMastered: r.isDataMastered,
      systemRoleCodeSource: r.systemRoleCodeSource,
      systemRoleCodeTarget: r.systemRoleCodeTarget,
      status: r.status,
    })),
  );
}

export function ruleSetHash(rules: readonly RoutingRuleBody[]): string {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(canonicalRules(rules), "utf8").digest("hex");
}

/** A short, single-line excerpt of a response body, with the credentials string blanked out in case it is echoed. */
function bodyExcerpt(body: string, credentialsString: string): string {
  let text = body;
  if (credentialsString) text = text.split(credentialsString).join("[secret]");
  text = text.replace(/\s+/g, " ").trim();
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** POSTs the tenant's rule set; retries 429, 5xx and network errors with backoff and jitter; throws otherwise. */
export async function postRoutingRules(request: PostRoutingRulesRequest): Promise<PostRoutingRulesResult> {
  const attempts = Math.max(1, request.attempts ?? 3);
  const timeoutMs = request.timeoutMs ?? 30_000;
  const url = routingRulesUrl(request.cfgApiUrl, request.tenantId);
  const what = `cfg API POST routingRules for tenant ${request.tenantId}`;
  const body = canonicalRules(request.rules);
  let lastProblem = "";
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) {
      const backoff = Math.min(8_000, 500 * 2 ** (attempt - 2));
      await new Promise((resolve) => setTimeout(resolve, backoff / 2 + Math.random() * (backoff / 2)));
    }
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { Authorization: `Basic ${request.credentialsString}`, "Content-Type": "application/json", Accept: "application/json" },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      lastProblem = e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : `network error (${e.cause?.code ?? e.cause?.message ?? e.message})`;
      continue;
    }
    const text = await response.text().catch(() => "");
    if (response.ok) return { status: response.status, attempts: attempt };
    lastProblem = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}${text ? `: ${bodyExcerpt(text, request.credentialsString)}` : ""}`;
    if (!(response.status === 429 || response.status >= 500)) throw new Error(`${what} failed: ${lastProblem}`);
  }
  throw new Error(`${what} failed after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${lastProblem}`);
}

function ruleSetState(inputs: RoutingRuleSetState, posted: { postedAt?: string }): RoutingRuleSetState {
  return {
    cfgApiUrl: inputs.cfgApiUrl,
    tenantId: inputs.tenantId,
    credentialsString: inputs.credentialsString,
    rules: inputs.rules,
    rulesHash: inputs.rulesHash,
    version: inputs.version,
    ruleCount: Array.isArray(inputs.rules) ? inputs.rules.length : 0,
    ...(posted.postedAt ? { postedAt: posted.postedAt } : {}),
  };
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
    if (typeof news.cfgApiUrl !== "string" || !/^https?:\/\/.+\/api\/$/.test(news.cfgApiUrl)) failures.push({ property: "cfgApiUrl", reason: "must be an http(s) URL ending in /api/" });
    if (typeof news.tenantId !== "string" || !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(news.tenantId)) {
      failures.push({ property: "tenantId", reason: "must be a UUID" });
    }
    if (typeof news.credentialsString !== "string" || news.credentialsString === "") failures.push({ property: "credentialsString", reason: "is required" });
    if (!Array.isArray(news.rules) || news.rules.length === 0) failures.push({ property: "rules", reason: "must hold at least one rule" });
    else if (news.rulesHash !== ruleSetHash(news.rules)) failures.push({ property: "rulesHash", reason: "is not the hash of the canonical rule set" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const replaces = String(olds.tenantId).toLowerCase() !== String(news.tenantId).toLowerCase() ? ["tenantId"] : [];
    const changes = replaces.length > 0 || needsPost(olds, news) || olds.credentialsString !== news.credentialsString;
    return { changes, replaces };
  },

  async create(inputs) {
    await postRoutingRules(inputs);
    return { id: String(inputs.tenantId).toLowerCase(), outs: ruleSetState(inputs, { postedAt: new Date().toISOString() }) };
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
