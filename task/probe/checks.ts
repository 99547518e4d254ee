/**
 * The network checks of the probe: DNS, TCP reachability and TLS of an origin, each timed. They never send a byte of
 * a request; the HTTP checks (probe.ts) follow them over the task's own HTTP layer.
 */
import dns from "node:dns/promises";
import net from "node:net";
import tls from "node:tls";

export type Verdict = "ok" | "FAIL" | "warn" | "skip";

export interface CheckResult {
  /** What was checked: `queue US (HUB_MQ_US)`, `ERS tenant <id>`, `host hub-ext-qa.example.com:443`. */
  endpoint: string;
  check: string;
  /** What was found, for a person to read; never a secret. */
  result: string;
  latencyMs: number | null;
  verdict: Verdict;
  /** A required check that does not pass fails the probe (exit 1). */
  required: boolean;
}

/** A result that needs no request (nothing to time). */
export function untimed(
  endpoint: string,
  check: string,
  result: string,
  verdict: Verdict,
  required = verdict === "FAIL",
): CheckResult {
  return { endpoint, check, result, latencyMs: null, verdict, required };
}

const TIMEOUT_MS = 10_000;

/** DNS, reachability and TLS of one origin (`https://host:port`). */
export async function originChecks(origin: string): Promise<CheckResult[]> {
  const u = new URL(origin);
  const https = u.protocol === "https:";
  const port = Number(u.port || (https ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, "");
  const endpoint = `host ${host}:${port}`;
  const results: CheckResult[] = [];
  const add = (check: string, result: string, latencyMs: number | null, verdict: Verdict, required = true) =>
    results.push({ endpoint, check, result, latencyMs, verdict, required });
  const dnsStart = performance.now();
  let address: string;
  try {
    address = net.isIP(host) ? host : (await withTimeout(dns.lookup(host), "DNS lookup")).address;
    add("dns", net.isIP(host) ? "an IP address" : `resolves to ${address}`, since(dnsStart), "ok");
  } catch (err) {
    add("dns", `does not resolve: ${describe(err)}`, since(dnsStart), "FAIL");
    return results;
  }
  const tcpStart = performance.now();
  try {
    await connect(() => net.connect({ host: address, port }), "connect");
    add("reach", `TCP connect to ${address}:${port}`, since(tcpStart), "ok");
  } catch (err) {
    add("reach", `cannot connect: ${describe(err)}`, since(tcpStart), "FAIL");
    return results;
  }
  if (!https) {
    add("tls", "plain http (only the embedded default uses it)", null, "skip", false);
    return results;
  }
  const tlsStart = performance.now();
  try {
    const socket = await connect(
      () => tls.connect({ host: address, port, servername: net.isIP(host) ? undefined : host }),
      "secureConnect",
    );
    const cert = (socket as tls.TLSSocket).getPeerCertificate();
    const days = cert?.valid_to ? Math.floor((Date.parse(cert.valid_to) - Date.now()) / 86_400_000) : undefined;
    const expiry = days === undefined ? "" : `, certificate valid for ${days} more days`;
    add(
      "tls",
      `${(socket as tls.TLSSocket).getProtocol() ?? "TLS"}, certificate verified${expiry}`,
      since(tlsStart),
      days !== undefined && days < 14 ? "warn" : "ok",
    );
    socket.destroy();
  } catch (err) {
    add("tls", `TLS failed: ${describe(err)}`, since(tlsStart), "FAIL");
  }
  return results;
}

/** Opens a socket and waits for `event`; the socket is destroyed unless the caller keeps it (TLS reads its certificate). */
function connect(open: () => net.Socket, event: "connect" | "secureConnect"): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = open();
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${TIMEOUT_MS / 1000} s`));
    }, TIMEOUT_MS);
    socket.once(event, () => {
      clearTimeout(timer);
      if (event === "connect") socket.destroy();
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    work,
    new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS)),
    ),
  ]).finally(() => clearTimeout(timer));
}

export function since(start: number): number {
  return Math.round(performance.now() - start);
}

export function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  return `${code ? `${code}: ` : ""}${e.cause?.message ?? e.message ?? String(err)}`;
}
