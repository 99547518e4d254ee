/**
 * Where the export task may send a tenant's credentials and data. HUB_API_CONFIG is shared with other pipelines and
 * connection records are edited by hand, so the task trusts no URL it reads there: it must be https on a host the
 * rendered definition lists for the hub region (the stack's hub APIs and queue broker). Loopback only where the
 * definition allows it; private addresses are fine (a hub reached through a private endpoint).
 */
import type { StackConfig } from "./stackConfig";
import { HUB_API_NAMES } from "./hubContract";
import { sortRegions, type HubRegion } from "./regions";
import { hubEnvironment } from "./tenants";
import { secretInQuery, secretParameter } from "./urlSecrets";

/** The rendered definition's `endpoints`. */
export interface HubEndpoints {
  /** Loopback URLs (http or https) are allowed: only the embedded default and the tests say so. */
  allowLoopback: boolean;
  /** Per hub region in use: the hosts (`host[:port]`) of its ERS, CFG and HRSYS APIs and of its queue broker. */
  regions: Partial<Record<HubRegion, { hosts: string[] }>>;
}

/** The hosts each region in use may be reached at, as the stack configures them. */
export function hubEndpoints(config: Pick<StackConfig, "hub" | "hubTenants" | "queues">): HubEndpoints {
  const regions: HubEndpoints["regions"] = {};
  for (const region of sortRegions(config.hubTenants.map((t) => t.hubRegion))) {
    const apis = hubEnvironment(config, region).apis;
    const urls = [
      ...HUB_API_NAMES.map((api) => apis[api]),
      ...(config.queues[region] ? [config.queues[region].baseUrl] : []),
    ];
    regions[region] = { hosts: [...new Set(urls.map((u) => hostOf(new URL(u))))].sort() };
  }
  return { allowLoopback: config.hub.allowLoopback, regions };
}

/**
 * Why the task must not call `url` for `region`, or undefined when it may: credentials in it, not https, a host the
 * stack did not configure for the region, or loopback where the definition does not allow it.
 */
export function endpointProblem(value: string, region: HubRegion, endpoints: HubEndpoints): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not a URL";
  }
  if (url.username || url.password) return CREDENTIALS_IN_URL;
  const secret = secretParameter(url);
  if (secret) return secretInQuery(secret, CREDENTIALS_INSTEAD);
  const loopback = isLoopbackHost(url.hostname);
  if (loopback && !endpoints.allowLoopback) return "points at loopback, which the definition does not allow";
  if (url.protocol !== "https:" && !(loopback && url.protocol === "http:")) return "must use https";
  const hosts = endpoints.regions[region]?.hosts ?? [];
  if (!hosts.includes(hostOf(url)))
    return `host ${hostOf(url)} is not one of the stack's hosts for region ${region} (${hosts.join(", ") || "none"})`;
  return undefined;
}

/** What the task authenticates with instead of credentials in a hub or broker URL. */
const CREDENTIALS_INSTEAD =
  "the task authenticates with the tenant's credentials string and the connection's client id and secret";

/** A URL must not carry `user:password@`: the secret would sit in clear in a shared table or record, and in logs. */
export const CREDENTIALS_IN_URL = `carries credentials (user:password@ before the host): remove them; ${CREDENTIALS_INSTEAD}`;

/**
 * The URL without credentials, query or fragment, for a message (a URL read from a table may carry a password).
 */
export function shownUrl(value: string): string {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * Whether a URL's hostname (as `URL.hostname` writes it) is this machine: `localhost` and `*.localhost` (with or
 * without the trailing dot), 127.0.0.0/8 in any notation the URL parser accepts, 0.0.0.0, and the IPv6 loopback,
 * unspecified, IPv4-mapped (`[::ffff:127.0.0.1]`) and IPv4-compatible forms.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (/^127\.\d+\.\d+\.\d+$/.test(host) || host === "0.0.0.0") return true;
  const v6 = host.replace(/^\[|\]$/g, "");
  if (!v6.includes(":")) return false;
  if (v6 === "::1" || v6 === "::") return true;
  const dotted = /^::(?:ffff:)?(\d+)\.\d+\.\d+\.\d+$/.exec(v6);
  if (dotted) return Number(dotted[1]) === 127 || v6.endsWith(":0.0.0.0");
  const hex = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (hex) {
    const high = parseInt(hex[1], 16);
    return high >> 8 === 127 || (high === 0 && parseInt(hex[2], 16) === 0);
  }
  return false;
}

/** `host[:port]` as compared: lower case, without a trailing dot, the default port left out. */
function hostOf(url: URL): string {
  return url.host.toLowerCase().replace(/\.(?=:|$)/, "");
}
