/**
 * `hub-export probe` and `run --probe`: each hub endpoint's DNS, reachability, TLS, authentication and answer shape.
 * Without `write` it creates nothing (requests the contract refuses: their 400 proves path and credentials); with
 * `write` one marked test message, ERS entity and intake report.
 */
import crypto from "node:crypto";
import type { Dispatcher } from "undici";
import {
  DATA_DOMAIN_CODE,
  authorizeResponseSchema,
  basicAuthorization,
  contractProperties,
  hubApiUrl,
  hubCallUrl,
  queueMessagesUrl,
  type AssumedCall,
  type HubContract,
} from "../../core/hubContract";
import type { QueueEndpoint } from "../connections/record";
import { authorizeForm, target } from "../queue/broker";
import { answerText, describeRequestError, parseJson } from "../http/retry";
import { HubHttp } from "../http/client";
import { ersRequestBody } from "../phases/ersStream";
import { originChecks, since, untimed, type CheckResult, type Verdict } from "./checks";

export type { CheckResult, Verdict };

export interface ProbeTargets {
  contract: HubContract;
  /** One per hub destination (region). */
  queues: { region: string; endpoint: QueueEndpoint }[];
  tenants: {
    hubTenantId: string;
    hubTenantCode: string;
    apis: { ERS?: string; CFG?: string; HRSYS?: string };
    credentialsString: string;
  }[];
  /** URLs whose hosts get the network checks only (DNS, TCP, TLS): nothing to authenticate with there. */
  hosts?: string[];
  systemCode: string;
  jobName: string;
}

export interface ProbeOptions {
  /** Send one marked test message, ERS entity and intake report instead of requests that create nothing. */
  write: boolean;
  dispatcher: Dispatcher;
}

/** The marker of everything a `--write` probe creates. */
export const PROBE_MARK = "HUB-EXPORT-PROBE";

/** The hub contract's key of each assumed call. */
const CONTRACT_KEY = { ERS: "ers", HRSYS: "intakeReport" } as const;

export async function probeHub(targets: ProbeTargets, options: ProbeOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const urls = [
    ...targets.queues.flatMap((q) => [q.endpoint.authUrl, q.endpoint.organizationsUrl]),
    ...targets.tenants.flatMap((t) =>
      (
        ["CFG", ...(["ERS", "HRSYS"] as const).filter((api) => targets.contract[CONTRACT_KEY[api]].enabled)] as const
      ).flatMap((api) => (t.apis[api] ? [t.apis[api]] : [])),
    ),
    ...(targets.hosts ?? []),
  ];
  const origins = [...new Set(urls.map((u) => new URL(u).origin))];
  const reachable = new Set<string>();
  for (const origin of origins) {
    const checks = await originChecks(origin);
    results.push(...checks);
    if (checks.every((c) => c.verdict !== "FAIL")) reachable.add(origin);
  }
  const http = new Http(options.dispatcher);
  const unreachable = (endpoint: string, url: string, required: boolean): CheckResult =>
    untimed(endpoint, "http", `not tried: ${new URL(url).host} is not reachable`, required ? "FAIL" : "warn");

  for (const { region, endpoint: q } of targets.queues) {
    const name = `queue ${region} (${q.connection})`;
    if (!reachable.has(new URL(q.authUrl).origin)) {
      results.push(unreachable(name, q.authUrl, true));
      continue;
    }
    const auth = await authorize(http, name, q);
    results.push(auth.result);
    if (!auth.session) continue;
    if (!reachable.has(new URL(q.organizationsUrl).origin)) results.push(unreachable(name, q.organizationsUrl, true));
    else results.push(await destination(http, name, q, auth.session, targets, options.write));
  }

  for (const tenant of targets.tenants) {
    const who = `tenant ${tenant.hubTenantCode}`;
    const cfg = tenant.apis.CFG;
    if (!cfg) results.push(untimed(`CFG ${who}`, "config", "no CFG URL in HUB_API_CONFIG", "FAIL"));
    else if (!reachable.has(new URL(cfg).origin)) results.push(unreachable(`CFG ${who}`, cfg, true));
    else results.push(await readRoutingRules(http, `CFG ${who}`, cfg, tenant));
    for (const api of ["ERS", "HRSYS"] as const) {
      const contract = targets.contract[CONTRACT_KEY[api]];
      const endpoint = `${api} ${who}`;
      const required = contract.enabled && contract.onFailure === "stop";
      const url = tenant.apis[api];
      if (!contract.enabled)
        results.push(
          untimed(endpoint, "path", `turned off (hubExport:hubContract.${CONTRACT_KEY[api]}.enabled: false)`, "skip"),
        );
      else if (!url) results.push(untimed(endpoint, "config", `no ${api} URL in HUB_API_CONFIG`, "FAIL"));
      else if (!reachable.has(new URL(url).origin)) results.push(unreachable(endpoint, url, required));
      else
        results.push(await assumedPath(http, endpoint, api, url, contract, required, tenant, targets, options.write));
    }
  }
  return results;
}

/** Exit 0 iff every required check passed. */
export function probePassed(results: readonly CheckResult[]): boolean {
  return results.every((r) => !r.required || r.verdict === "ok" || r.verdict === "warn");
}

async function authorize(
  http: Http,
  endpoint: string,
  q: QueueEndpoint,
): Promise<{ result: CheckResult; session?: { token: string; orgId: string; envId: string } }> {
  const form = { "content-type": "application/x-www-form-urlencoded" };
  const a = await http.send("POST", q.authUrl, form, authorizeForm(q));
  const base = { endpoint, check: "authorize", latencyMs: a.ms, required: true };
  const fail = (result: string) => ({ result: { ...base, result, verdict: "FAIL" as const } });
  if (a.error) return fail(a.error);
  if (a.status === 401 || a.status === 403) return fail(`the broker refused the client credentials (HTTP ${a.status})`);
  if (a.status !== 200) return fail(`HTTP ${a.status}: ${answerText(a.text)}`);
  const parsed = authorizeResponseSchema.safeParse(parseJson(a.text));
  if (!parsed.success) return fail("HTTP 200, but the answer lacks access_token or simple_client {orgId, envId}");
  const { orgId, envId } = parsed.data.simple_client;
  return {
    result: { ...base, result: `token issued (org ${orgId}, env ${envId})`, verdict: "ok" },
    session: { token: parsed.data.access_token, orgId, envId },
  };
}

/** The queue exists: an empty batch (refused, nothing stored), or with `write` one marked message. */
async function destination(
  http: Http,
  endpoint: string,
  q: QueueEndpoint,
  session: { token: string; orgId: string; envId: string },
  targets: ProbeTargets,
  write: boolean,
): Promise<CheckResult> {
  const url = queueMessagesUrl(q.organizationsUrl, session.orgId, session.envId, q.queueName);
  const headers = { authorization: `bearer ${session.token}`, "content-type": "application/json" };
  const base = { endpoint, check: write ? "publish (marked test message)" : "destination", required: true };
  const answer = (ms: number, result: string, verdict: Verdict): CheckResult => ({
    ...base,
    result,
    latencyMs: ms,
    verdict,
  });
  if (write) {
    const messageId = `${PROBE_MARK}-${crypto.randomUUID()}`;
    const properties = contractProperties(
      {
        transactionId: messageId,
        tenantId: PROBE_MARK,
        systemCode: targets.systemCode,
        dataDomainCode: DATA_DOMAIN_CODE,
        entityName: PROBE_MARK,
        recordCount: "0",
      },
      targets.contract.queueMessage,
    );
    const body = JSON.stringify({ header: { probe: PROBE_MARK, createdAt: new Date().toISOString() }, entities: [] });
    const a = await http.send(
      "PUT",
      `${url}/${encodeURIComponent(messageId)}`,
      headers,
      JSON.stringify({ properties, headers: { messageId }, body }),
    );
    if (a.error) return answer(a.ms, a.error, "FAIL");
    const doc = parseJson(a.text) as { status?: string } | undefined;
    return (a.status === 201 || a.status === 200) && doc?.status === "successful"
      ? answer(a.ms, `stored test message ${messageId} in ${q.queueName}`, "ok")
      : answer(a.ms, `HTTP ${a.status}: ${answerText(a.text)}`, "FAIL");
  }
  const a = await http.send("PUT", url, headers, "[]");
  if (a.error) return answer(a.ms, a.error, "FAIL");
  const verdicts: Record<number, [Verdict, string]> = {
    400: ["ok", `${q.queueName} answers (an empty batch refused; nothing stored)`],
    401: ["FAIL", "the token was refused"],
    403: ["FAIL", `not allowed to publish to ${q.queueName} (HTTP 403)`],
    404: ["FAIL", `unknown organization, environment or destination ${q.queueName} (HTTP 404)`],
  };
  const [verdict, result] =
    verdicts[a.status!] ??
    (a.status! < 300
      ? ["warn", `HTTP ${a.status}: accepted an empty batch`]
      : ["FAIL", `HTTP ${a.status}: ${answerText(a.text)}`]);
  return answer(a.ms, result, verdict);
}

/** The cfg API, read only: the tenant's routing rules. */
async function readRoutingRules(
  http: Http,
  endpoint: string,
  cfg: string,
  tenant: ProbeTargets["tenants"][number],
): Promise<CheckResult> {
  const a = await http.send("GET", hubApiUrl(cfg, "CFG", tenant.hubTenantId), {
    authorization: basicAuthorization(tenant.credentialsString),
    accept: "application/json",
  });
  const answer = (result: string, verdict: Verdict = "FAIL", required = true): CheckResult => ({
    endpoint,
    check: "read routingRules",
    latencyMs: a.ms,
    result,
    verdict,
    required,
  });
  if (a.error) return answer(a.error);
  if (a.status === 401 || a.status === 403)
    return answer(`the tenant's credentials string was refused (HTTP ${a.status})`);
  if (a.status === 404 || a.status === 405)
    return answer(
      `HTTP ${a.status}: no read of routing rules (the specification documents only the POST); credentials not verified`,
      "warn",
      false,
    );
  const doc = parseJson(a.text);
  if (a.status! >= 200 && a.status! < 300 && Array.isArray(doc))
    return answer(`${doc.length} routing rule(s) for the tenant`, "ok");
  return answer(`HTTP ${a.status}: ${a.status! < 300 ? "the answer is not a JSON array" : answerText(a.text)}`);
}

/** ERS or HRSYS at the contract's path: an empty body (refused, nothing created), or with `write` a marked test. */
async function assumedPath(
  http: Http,
  endpoint: string,
  api: "ERS" | "HRSYS",
  apiUrl: string,
  contract: AssumedCall,
  required: boolean,
  tenant: ProbeTargets["tenants"][number],
  targets: ProbeTargets,
  write: boolean,
): Promise<CheckResult> {
  const url = hubCallUrl(apiUrl, contract.path, tenant.hubTenantId);
  const probeTx = crypto.randomUUID();
  const body = !write
    ? "{}"
    : api === "ERS"
      ? ersRequestBody(probeTx, targets.systemCode, [JSON.stringify({ UserId: PROBE_MARK, Probe: true })])
      : JSON.stringify({
          jobName: `${targets.jobName}_${PROBE_MARK}`.replace(/-/g, "_"),
          transactionId: probeTx,
          systemCode: targets.systemCode,
          dataDomainCode: DATA_DOMAIN_CODE,
          status: "STARTED",
          counts: {},
        });
  const a = await http.send(
    "POST",
    url,
    { authorization: basicAuthorization(tenant.credentialsString), "content-type": "application/json" },
    body,
  );
  const where = `POST ${new URL(url).pathname}`;
  const answer = (result: string, verdict: Verdict = required ? "FAIL" : "warn"): CheckResult => ({
    endpoint,
    check: write ? `${where} (marked test ${api === "ERS" ? "entity" : "report"})` : where,
    latencyMs: a.ms,
    required,
    result,
    verdict,
  });
  const fix = `set hubExport:hubContract.${CONTRACT_KEY[api]}.path, or turn the call off or make it best-effort (enabled: false / onFailure: record)`;
  if (a.error) return answer(a.error);
  const s = a.status!;
  if (s === 404 || s === 405) return answer(`HTTP ${s}: the hub has no such endpoint; ${fix}`);
  if (s === 401 || s === 403) return answer(`the tenant's credentials string was refused (HTTP ${s})`);
  if (write)
    return s >= 200 && s < 300
      ? answer(`HTTP ${s}: accepted (transaction ${probeTx}, marked ${PROBE_MARK})`, "ok")
      : answer(`HTTP ${s}: ${answerText(a.text)}`);
  if (s === 400 || s === 422)
    return answer(`HTTP ${s}: answers at the assumed path (an empty body refused; nothing created)`, "ok");
  if (s >= 200 && s < 300)
    return answer(`HTTP ${s}: accepted an empty body (the answer does not match the assumed contract)`, "warn");
  return answer(`HTTP ${s}: ${answerText(a.text)}`);
}

/** One request over the task's HTTP layer (deadline, answer cap, no retry); a failure is a result, never a throw. */
class Http {
  private readonly http: HubHttp;
  constructor(dispatcher: Dispatcher) {
    this.http = new HubHttp(
      dispatcher,
      { attempts: 1, baseMs: 0, maxMs: 0 },
      { deadlineMs: PROBE_DEADLINE_MS, budgetMs: PROBE_DEADLINE_MS },
    );
  }

  async send(
    method: "GET" | "POST" | "PUT",
    url: string,
    headers: Record<string, string>,
    body?: string | Buffer,
  ): Promise<{ status?: number; text: string; ms: number; error?: string }> {
    const start = performance.now();
    try {
      const { status, text } = await this.http.send({ ...target(url), method, headers, body });
      return { status, text, ms: since(start) };
    } catch (err) {
      return { text: "", ms: since(start), error: `no answer: ${describeRequestError(err)}` };
    }
  }
}

/** A probe's request waits this long at most: a check, not a run. */
const PROBE_DEADLINE_MS = 15_000;
