/** Small HTTP helpers for the emulator tests: real requests on loopback, no mocks. */
import { encodeCredentialsString, type ClientCredentials } from "../../core/credentials";
import {
  HUB_API_PATHS,
  basicAuthorization,
  hubApiUrl,
  queueAuthUrl,
  queueMessagesUrl,
  queueOrganizationsUrl,
  type HubApiName,
} from "../../core/hubContract";
import type { HubRegion } from "../../core/regions";
import { DEV_QUEUES, DEV_TENANTS } from "../../emulator/config";
import type { Emulator } from "../../emulator";

export const TENANT_US = "11111111-1111-4111-8111-111111111111";
export const TENANT_EU = "22222222-2222-4222-8222-222222222222";

export interface Answer {
  status: number;
  json: any;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export async function authorizeRaw(
  em: Emulator,
  region: HubRegion,
  form: Record<string, string>,
  contentType = "application/x-www-form-urlencoded",
): Promise<Answer> {
  const res = await fetch(queueAuthUrl(em.urls.queues[region]), {
    method: "POST",
    headers: { "content-type": contentType },
    body: contentType.startsWith("application/json") ? JSON.stringify(form) : new URLSearchParams(form).toString(),
  });
  return answer(res);
}

/** Authorizes with the region's configured (dev by default) credentials and returns the token. */
export async function authorize(em: Emulator, region: HubRegion = "US"): Promise<string> {
  const q = em.config.queues[region];
  const a = await authorizeRaw(em, region, {
    client_id: q.clientId,
    client_secret: q.clientSecret,
    grant_type: "client_credentials",
  });
  if (a.status !== 200) throw new Error(`authorize answered ${a.status}`);
  return a.json.access_token;
}

export function messagesUrl(
  em: Emulator,
  queueName: string,
  region: HubRegion = "US",
  ids: { orgId?: string; envId?: string } = {},
): string {
  const q = em.config.queues[region];
  return queueMessagesUrl(
    queueOrganizationsUrl(em.urls.queues[region]),
    ids.orgId ?? q.orgId,
    ids.envId ?? q.envId,
    queueName,
  );
}

export function message(messageId: string, body = `body of ${messageId}`) {
  return {
    properties: {
      transactionId: "tx-1",
      tenantId: TENANT_US,
      systemCode: "HRSYS",
      dataDomainCode: "EMPL",
      entityName: "User",
      recordCount: "1",
    },
    headers: { messageId },
    body,
  };
}

/** PUT with a bearer token; `body` is JSON-encoded unless it is already a string. */
export async function put(
  url: string,
  token: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(url, {
    method: "PUT",
    headers: { "content-type": "application/json", ...(token ? { authorization: `bearer ${token}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return answer(res);
}

export function devCredentialsString(tenantId: string): string {
  return encodeCredentialsString(DEV_TENANTS[tenantId]);
}

/** A hub API call with `Authorization: Basic <credentials string>` (or the given header, or none with null). */
export async function hubCall(
  em: Emulator,
  api: HubApiName,
  opts: {
    tenantId?: string | null;
    credentials?: ClientCredentials;
    authorization?: string | null;
    body?: unknown;
    method?: string;
    contentType?: string;
    rawQuery?: string;
  } = {},
): Promise<Answer> {
  const base = { CFG: em.urls.cfg, ERS: em.urls.ers, HRSYS: em.urls.hrsys }[api];
  const tenantId = opts.tenantId === undefined ? TENANT_US : opts.tenantId;
  let url = tenantId === null ? base + HUB_API_PATHS[api] : hubApiUrl(base, api, tenantId);
  if (opts.rawQuery !== undefined) url = url.split("?")[0] + opts.rawQuery;
  const authorization =
    opts.authorization === null
      ? undefined
      : (opts.authorization ??
        basicAuthorization(
          opts.credentials ? encodeCredentialsString(opts.credentials) : devCredentialsString(TENANT_US),
        ));
  const method = opts.method ?? "POST";
  const res = await fetch(url, {
    method,
    headers: {
      ...(authorization ? { authorization } : {}),
      ...(method === "GET" ? {} : { "content-type": opts.contentType ?? "application/json" }),
    },
    body: method === "GET" ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body),
  });
  return answer(res);
}

export { DEV_QUEUES, DEV_TENANTS };
