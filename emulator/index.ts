/**
 * The local hub and queue emulator: the regional queue brokers and the cfg, ERS and HRSYS APIs of
 * docs/hub-contract.md on one loopback HTTP port, with seeded fault injection and an inspection API under `/_emulator/`.
 * See emulator/README.md for the URL layout and the fault spec.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { HUB_API_PATHS, ROUTING_RULES_LISTING, parseQueuePath } from "../core/hubContract";
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import { resolveConfig, type EmulatorConfig, type EmulatorConfigInput } from "./config";
import {
  DEFAULT_SEED,
  FaultInjector,
  FaultSpecError,
  HOSTILE_KINDS,
  formatFaultRules,
  resolveFaults,
  type FaultConfig,
  type FaultDecision,
  type FaultEndpoint,
  type FaultKind,
  type FaultsInput,
  type HostileKind,
} from "./faults";
import { HttpError, mediaType, methodNotAllowed, parseJson, readBody, sendError, sendJson, type Reply } from "./http";
import { hostileAnswer } from "./hostile";
import { HubApis } from "./hubApis";
import { QueueBroker, REGION_BY_PATH, REGION_PATH } from "./queueBroker";
import { EmulatorStore, type EmulatorState } from "./state";
import { LinkEmulator, resolveLinkSettings, type LinkApi, type LinkInput } from "./link";

export type { EmulatorConfig, EmulatorConfigInput } from "./config";
export type { EmulatorState } from "./state";
export type { FaultConfig, FaultRules, FaultSettings, FaultsInput, FaultEndpoint } from "./faults";
export type { LinkInput, LinkState } from "./link";
export { DEV_QUEUES, DEV_TENANTS } from "./config";

export interface EmulatorOptions {
  /** Default 127.0.0.1: the emulator holds dev credentials and must not be reachable from elsewhere by accident. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Validated and filled from the dev config (see emulator/config.ts). */
  config?: EmulatorConfigInput;
  /** Faults in force from the start: a text spec or rules. */
  faults?: FaultsInput;
  /** PRNG seed of the fault streams and the latency jitter (default 1), unless `faults` carries one. */
  seed?: number;
  /** A remote hub: latency and rate limits per API and region (emulator/link.ts). */
  link?: LinkInput;
  /** Called with one line per request (method, path, status, time, injected fault); never headers or bodies. */
  log?: (line: string) => void;
}

export interface EmulatorUrls {
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** Queue base URL per region: url = `{base}/api/v1/organizations/`, authUrl = `{base}/api/v1/authorize`. */
  queues: Record<HubRegion, string>;
  /** Hub API URLs, ending in `/api/` like HUB_API_CONFIG.hub_api_url. */
  cfg: string;
  ers: string;
  hrsys: string;
  /** `GET` for the inspection state. */
  state: string;
}

export interface Emulator {
  urls: EmulatorUrls;
  config: EmulatorConfig;
  /** What the hub received; with `messages: true`, also the stored messages. */
  state(options?: { messages?: boolean }): EmulatorState;
  /** Replaces the fault configuration and restarts its PRNG streams; a missing seed keeps the current one. */
  setFaults(faults: FaultsInput): FaultConfig;
  /** Forgets what was received and restarts the fault streams; tokens stay valid. */
  reset(): void;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** `admit(units)`: takes units from the link's rate limit, or throws its 429. */
type Handler = (ctx: {
  req: IncomingMessage;
  query: URLSearchParams;
  fault: FaultDecision;
  admit: (units: number) => void;
}) => Promise<Reply>;
interface Route {
  /** Routes with an endpoint are subject to fault injection. */
  endpoint?: FaultEndpoint;
  /** The link the request travels (latency); `limited`: it also counts against the link's rate limit. */
  link?: { api: LinkApi; region?: HubRegion; limited: boolean };
  methods: Record<string, Handler>;
}

const NO_FAULT: FaultDecision = { latencyMs: 0 };

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const config = resolveConfig(options.config);
  const store = new EmulatorStore(config.retainBodies, config.deduplicate);
  const broker = new QueueBroker(config, store);
  const hub = new HubApis(config, store);
  const injector = new FaultInjector(resolveFaults(options.faults ?? {}, options.seed ?? DEFAULT_SEED));
  const links = new LinkEmulator(resolveLinkSettings(options.link), injector.config.seed);
  const tenantRegions = new Map(Object.entries(config.tenants).map(([id, t]) => [id.toLowerCase(), t.region]));

  const snapshot = (messages: boolean): EmulatorState => ({
    ...store.snapshot({ messages }),
    faults: { ...injector.config, stats: injector.statistics() },
    links: links.snapshot(),
  });
  const setFaults = (input: FaultsInput): FaultConfig => {
    injector.apply(resolveFaults(input, injector.config.seed));
    return injector.config;
  };
  const reset = () => {
    store.reset();
    injector.reseed();
    links.reset(injector.config.seed);
  };

  const inspection: Record<string, Route> = {
    state: {
      methods: {
        GET: async ({ query }) => ({
          status: 200,
          body: snapshot(query.get("messages") === "1" || query.get("messages") === "true"),
        }),
      },
    },
    reset: {
      methods: {
        POST: async ({ req }) => {
          controlRequest(req);
          reset();
          return { status: 200, body: { reset: true } };
        },
      },
    },
    faults: {
      methods: {
        GET: async () => ({
          status: 200,
          body: { ...injector.config, spec: formatFaultRules(injector.config.rules), stats: injector.statistics() },
        }),
        POST: async ({ req }) => {
          // JSON `{spec|rules, seed}`.
          controlRequest(req);
          const input = parseJson(await readBody(req, 64 * 1024));
          try {
            const applied = setFaults(input as FaultsInput);
            return { status: 200, body: { ...applied, spec: formatFaultRules(applied.rules) } };
          } catch (err) {
            if (err instanceof FaultSpecError) throw new HttpError(400, err.message);
            throw err;
          }
        },
      },
    },
  };

  // `/{cfg|ers|hrsys}/api/{the contract's path}`: the API URLs end in `/api/`, like HUB_API_CONFIG.hub_api_url.
  const hubRoutes: Record<string, Record<string, Route>> = {
    cfg: {
      [HUB_API_PATHS.CFG]: {
        endpoint: "cfg.routingRules",
        methods: {
          POST: ({ req, query }) => hub.postRoutingRules(req, query),
          [ROUTING_RULES_LISTING.method]: ({ req, query }) => hub.getRoutingRules(req, query),
        },
      },
    },
    ers: {
      [HUB_API_PATHS.ERS]: {
        endpoint: "ers.entities",
        methods: { POST: ({ req, query }) => hub.postEntities(req, query) },
      },
    },
    hrsys: {
      [HUB_API_PATHS.HRSYS]: {
        endpoint: "hrsys.intakeJobs",
        methods: { POST: ({ req, query }) => hub.postIntakeJob(req, query) },
      },
    },
  };

  /** Path segments → route, or undefined for 404. */
  function route(s: string[]): Route | undefined {
    if (s[0] === "mq") {
      // `/mq/{region}` is a region's queue base URL; the contract parses what follows it.
      const region = REGION_BY_PATH.get(s[1] ?? "");
      const path = region && parseQueuePath(s.slice(2));
      if (!region || !path) return undefined;
      if (path.endpoint === "authorize")
        return {
          endpoint: "queue.authorize",
          link: { api: "queue", region, limited: false },
          methods: { POST: ({ req }) => broker.authorize(region, req) },
        };
      return {
        endpoint: "queue.publish",
        link: { api: "queue", region, limited: true },
        methods: {
          PUT: ({ req, fault, admit }) => broker.publish(region, path, req, fault.kind === "tokenExpiry", admit),
        },
      };
    }
    if (s.length === 3 && s[1] === "api") {
      const r = own(own(hubRoutes, s[0]) ?? {}, s[2]);
      // A hub without this endpoint: 404, as for any path it does not serve.
      if (!r || (r.endpoint && (config.missingEndpoints as string[]).includes(r.endpoint))) return undefined;
      return { ...r, link: { api: s[0] as LinkApi, limited: true } };
    }
    if (s.length === 2 && s[0] === "_emulator") return own(inspection, s[1]);
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const pathname = q < 0 ? url : url.slice(0, q);
    let fault = NO_FAULT;
    let status = 0;
    // The way back of the link's round trip: every answer waits for it, errors too. A lost reply (resetAfter): the
    // request was processed, or failed, and the connection drops instead of the answer.
    let back = 0;
    const answer = async (code: number, send: () => void) => {
      if (fault.kind === "resetAfter") return void req.socket.destroy();
      status = code;
      if (back > 0) await delay(back);
      send();
    };
    try {
      const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
      const r = route(decodeSegments(pathname));
      if (!r) throw new HttpError(404, "no such resource");
      const handler = own(r.methods, req.method ?? "");
      if (!handler) throw methodNotAllowed(Object.keys(r.methods));
      // A hub API request's region is its tenant's, when the config names one.
      const tenant = (query.get("tenantId") ?? "").toLowerCase();
      const region = r.link ? (r.link.region ?? tenantRegions.get(tenant) ?? "ANY") : undefined;
      if (r.endpoint) fault = injector.decide(r.endpoint, region);
      // Counted always (the state's `links`); the latency and the limit only when configured.
      const link = r.link ? links.link(r.link.api, region!) : undefined;
      if (link) {
        const trip = link.roundTripMs();
        back = trip / 2;
        if (r.link!.limited) link.arrived();
        if (trip > 0) await delay(trip / 2);
      }
      if (fault.latencyMs > 0) await delay(fault.latencyMs);
      if (fault.kind === "reset") {
        req.socket.destroy();
        return;
      }
      if (fault.kind === "status") throw new HttpError(fault.status!, "injected fault");
      if (isHostile(fault.kind)) {
        status = await hostileAnswer(fault.kind, req, res);
        return;
      }
      const admit = (units: number) => {
        if (link && r.link!.limited) link.admit(units, links.settings.retryAfter);
      };
      // The hub APIs count requests, before any body is read; the queues count messages (queueBroker.ts).
      if (r.link && r.link.api !== "queue") admit(1);
      const reply = await handler({ req, query, fault, admit });
      await answer(reply.status, () => sendJson(res, reply.status, reply.body, reply.headers));
    } catch (err) {
      if (!(err instanceof HttpError))
        (options.log ?? ((line: string) => process.stderr.write(line + "\n")))(
          `emulator: internal error on ${req.method} ${pathname}: ${(err as Error).stack ?? String(err)}`,
        );
      const e = err instanceof HttpError ? err : new HttpError(500, "internal error");
      await answer(e.status, () => sendError(res, e.status, e.message, e.headers));
    } finally {
      if (options.log) {
        const note = fault.kind ? ` [fault ${fault.kind === "status" ? fault.status : fault.kind}]` : "";
        options.log(`${req.method} ${pathname} ${status || "-"} ${(performance.now() - started).toFixed(1)}ms${note}`);
      }
    }
  }

  const server = http.createServer((req, res) => void handle(req, res));
  // Clients keep connections open between batches; outlive their idle timeouts so the server never closes first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });

  const { address, port } = server.address() as AddressInfo;
  const host =
    address === "0.0.0.0" || address === "::" ? "127.0.0.1" : address.includes(":") ? `[${address}]` : address;
  const base = `http://${host}:${port}`;
  const queues = {} as Record<HubRegion, string>;
  for (const region of HUB_REGIONS) queues[region] = `${base}/mq/${REGION_PATH[region]}`;

  let closing: Promise<void> | undefined;
  return {
    urls: {
      base,
      queues,
      cfg: `${base}/cfg/api/`,
      ers: `${base}/ers/api/`,
      hrsys: `${base}/hrsys/api/`,
      state: `${base}/_emulator/state`,
    },
    config,
    state: (opts = {}) => snapshot(opts.messages ?? false),
    setFaults,
    reset,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/**
 * The control endpoints change a running emulator: they take JSON only (a cross-origin page cannot send it without a
 * CORS preflight, which is never granted) and refuse a request whose Origin is another than the emulator's own.
 */
function controlRequest(req: IncomingMessage): void {
  const origin = req.headers.origin;
  if (mediaType(req) !== "application/json" || (origin !== undefined && origin !== `http://${req.headers.host}`)) {
    throw new HttpError(
      403,
      "control requests are accepted only as application/json, from the emulator's own origin or without an Origin",
    );
  }
}

function isHostile(kind: FaultKind | undefined): kind is HostileKind {
  return (HOSTILE_KINDS as readonly string[]).includes(kind ?? "");
}

/** A table lookup that a path segment like `__proto__` or `constructor` cannot escape. */
function own<T>(table: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** `/a/b%2Fc` → ["a", "b/c"]; a malformed escape is a client error. */
function decodeSegments(pathname: string): string[] {
  const parts = pathname.split("/").slice(1);
  try {
    return parts.map((p) => (p.includes("%") ? decodeURIComponent(p) : p));
  } catch {
    throw new HttpError(400, "malformed percent-encoding in the path");
  }
}

/** An unref'd timer: pending injected latency never keeps a closing process alive. */
const delay = (ms: number) => sleep(ms, undefined, { ref: false });
