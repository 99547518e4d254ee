/** `hub-export emulator`: the local hub and queue emulator, standalone, until SIGINT or SIGTERM. */
import { defineCommand } from "../command";
import { UsageError, UserError } from "../../core/errors";
import { encodeCredentialsString } from "../../core/credentials";
import { HUB_REGIONS } from "../../core/regions";
import { loadConfigFile, resolveConfig } from "../../emulator/config";
import {
  DEFAULT_SEED,
  FAULT_ENDPOINTS,
  HOSTILE_KINDS,
  formatFaultRules,
  parseFaultSpec,
  parseSeed,
} from "../../emulator/faults";
import { startEmulator, type Emulator } from "../../emulator";
import { formatLinkSettings, parseLatencySpec, parseRateLimitSpec, resolveLinkSettings } from "../../emulator/link";
import { untilStopSignal } from "../../local/signals";
import { asUsage } from "../specOption";
import { cut } from "../../core/redact";

export default defineCommand({
  summary:
    "Run the local hub and queue emulator (loopback HTTP, with fault injection; optionally a remote, rate-limited hub)",
  options: {
    port: {
      type: "string",
      value: "N",
      description: "The loopback port to listen on (0: a free one)",
      default: "0",
      example: "--port 8080",
    },
    config: {
      type: "string",
      value: "PATH",
      description:
        "A JSON config: queues (clientId, clientSecret, orgId, envId per region), tenants, limits (emulator/README.md)",
      defaultText: "the built-in dev config, whose credentials are printed",
      example: "--config ./emulator.json",
    },
    faults: {
      type: "string",
      value: "SPEC",
      description: "Fault injection: rules 'ENDPOINT:KEY=VALUE,...' separated by ';' (see below)",
      defaultText: "none",
      example: "--faults 'queue.publish:503=0.1,latency=5;*:reset=0.01'",
    },
    seed: {
      type: "string",
      value: "N",
      description:
        "Seed of the fault decisions and the latency jitter: the same seed and requests give the same faults and round trips",
      default: String(DEFAULT_SEED),
      example: "--seed 7",
    },
    latency: {
      type: "string",
      value: "SPEC",
      description:
        "A remote hub's round trips per API and region: rules 'API[.REGION]=MSms[±JITTER]' separated by ',' (see below)",
      defaultText: "none",
      example: "--latency 'queue=40ms±10,ers=80ms'",
    },
    "rate-limit": {
      type: "string",
      value: "SPEC",
      description:
        "Token-bucket limits per API and region: rules 'API[.REGION]=N/s[@BUCKET]' separated by ','; over them, 429",
      defaultText: "none",
      example: "--rate-limit 'queue=2000/s,ers=50/s'",
    },
    "no-retry-after": {
      type: "boolean",
      description: "Answer the rate limit's 429s without a Retry-After header",
      example: "--no-retry-after",
    },
    json: {
      type: "boolean",
      description: "Print one JSON line with the URLs and faults instead of the text banner (for scripts)",
      example: "--json",
    },
    verbose: {
      type: "boolean",
      description:
        "Log one line per request on stderr (method, path, status, time, injected fault; never headers or bodies)",
      example: "--verbose",
    },
  },
  details: [
    `--faults SPEC: rules separated by ';', each 'ENDPOINT:KEY=VALUE,KEY=VALUE'. ENDPOINT is one of ${FAULT_ENDPOINTS.join(", ")}, or * for all (an endpoint's own rule overrides * key by key), or an endpoint in one hub region, like queue.publish.EU (it overrides both for that region). KEY is a status code 400..599 (the rate of that answer), reset (rate of connections destroyed before processing), resetAfter (rate processed, then destroyed before the answer), tokenExpiry (rate of valid tokens treated as expired; queue.publish only), latency (milliseconds added to every request), or the rate of a hostile hub's answers: ${HOSTILE_KINDS.join(", ")} (emulator/README.md). Rates are from 0 to 1 and add up to at most 1 per endpoint; 'none' means no faults.`,
    "--latency SPEC: API is queue, cfg, ers, hrsys or * (all), optionally with .US, .EU or .APAC; the most specific rule wins. A round trip is whole milliseconds, with ±J (or +-J) of uniform jitter drawn from a stream per link seeded by --seed; half of it passes before the request is handled, half before the answer leaves.",
    "--rate-limit SPEC: a token bucket per API and region, refilled at N a second, holding BUCKET (default a tenth of a second's worth, at least 10). The queues count messages (publishing only), the hub APIs requests; a request over the limit is answered 429 with Retry-After (whole seconds) unless --no-retry-after. GET /_emulator/state shows per link the requests, 429s and achieved rates.",
    "It runs until Ctrl-C (SIGINT) or SIGTERM. Faults can be changed while it runs: POST /_emulator/faults with application/json (control requests are refused with 403 from another origin or in another format).",
  ],
  examples: [
    {
      command: "hub-export emulator --port 8080",
      does: "the hub and the three regional brokers on http://127.0.0.1:8080, with dev credentials",
    },
    {
      command: "hub-export emulator --faults 'queue.publish:503=0.2' --seed 3 --verbose",
      does: "one publish in five answers 503, reproducibly, each request logged",
    },
    {
      command: "hub-export emulator --faults 'ers.entities:drip=1;queue.publish:echo=0.1'",
      does: "a hostile hub: ERS drips its answers, one publish in ten echoes the request's headers",
    },
    {
      command: "hub-export emulator --latency 'queue=40ms±10,ers=80ms' --rate-limit 'queue=2000/s'",
      does: "a remote hub: 40 ms queue and 80 ms ERS round trips, 2,000 messages/s per regional queue, 429 with Retry-After over it",
    },
  ],
  exitCodes: { 1: "a bad --config file, or the port is taken" },
  async run(values, io) {
    // The parser gives the default, 0 (a free port).
    const port = Number(values.port);
    if (!/^\d+$/.test(values.port!) || port > 65535)
      throw new UsageError(`--port must be an integer from 0 to 65535, got '${cut(values.port)}'`);
    const seed = asUsage("--seed", () => parseSeed(values.seed!));
    const rules = values.faults === undefined ? {} : asUsage("--faults", () => parseFaultSpec(values.faults!));
    const link = resolveLinkSettings({
      latency: asUsage("--latency", () => parseLatencySpec(values.latency ?? "")),
      rateLimit: asUsage("--rate-limit", () => parseRateLimitSpec(values["rate-limit"] ?? "")),
      retryAfter: !values["no-retry-after"],
    });
    const config = values.config !== undefined ? loadConfigFile(values.config) : resolveConfig(undefined);

    const emulator = await startEmulator({
      port,
      config,
      faults: { rules },
      seed,
      link,
      log: values.verbose ? (line) => io.stderr.write(line + "\n") : undefined,
    }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE" || err.code === "EACCES")
        throw new UserError(
          `emulator: cannot listen on 127.0.0.1:${port} (${err.code}): choose another --port, or stop what listens there`,
        );
      throw err;
    });

    // Listen for the signals before printing: whoever reads the URLs may stop us at once.
    const stopped = untilStopSignal();
    const shown = { seed, faults: formatFaultRules(rules), link: formatLinkSettings(link) };
    io.stdout.write(
      values.json
        ? JSON.stringify({ urls: emulator.urls, faults: { seed, spec: shown.faults }, link: shown.link }) + "\n"
        : banner(emulator, { ...shown, devCredentials: values.config === undefined }),
    );

    await stopped;
    await emulator.close();
    if (!values.json) io.stdout.write("Emulator stopped.\n");
    return 0;
  },
});

/** URLs, ids and, for the built-in dev config only, its credentials (they are dev-only; a config file's never show). */
function banner(
  emulator: Emulator,
  opts: { seed: number; faults: string; link: ReturnType<typeof formatLinkSettings>; devCredentials: boolean },
): string {
  const { urls, config } = emulator;
  const width = Math.max(...HUB_REGIONS.map((r) => urls.queues[r].length));
  const lines = [
    `Hub emulator listening on ${urls.base} (loopback only)`,
    "",
    "Queue brokers (connection record: url = <base>/api/v1/organizations/, authUrl = <base>/api/v1/authorize):",
    ...HUB_REGIONS.map(
      (r) =>
        `  ${r.padEnd(5)} ${urls.queues[r].padEnd(width)}  orgId ${config.queues[r].orgId}  envId ${config.queues[r].envId}  clientId ${config.queues[r].clientId}`,
    ),
    "Hub APIs (hub_api_url):",
    `  CFG   ${urls.cfg}`,
    `  ERS   ${urls.ers}`,
    `  HRSYS ${urls.hrsys}`,
    `State   ${urls.state}  (POST ${urls.base}/_emulator/reset, POST ${urls.base}/_emulator/faults)`,
    `Faults  ${opts.faults} (seed ${opts.seed})`,
    `Link    latency ${opts.link.latency}; rate limit ${opts.link.rateLimit}${opts.link.rateLimit !== "none" ? `, 429 ${opts.link.retryAfter ? "with" : "without"} Retry-After` : ""}`,
    `Tenants ${Object.keys(config.tenants).join(", ") || "none"}`,
  ];
  if (opts.devCredentials)
    lines.push(
      "",
      "Built-in dev credentials (for local use only; never for a real hub):",
      ...HUB_REGIONS.map(
        (r) =>
          `  queue ${r.padEnd(5)} client_id ${config.queues[r].clientId}  client_secret ${config.queues[r].clientSecret}`,
      ),
      ...Object.entries(config.tenants).map(
        ([id, t]) =>
          `  tenant ${id}  clientId ${t.clientId}  clientSecret ${t.clientSecret}  credentials string ${encodeCredentialsString(t)}`,
      ),
    );
  lines.push("", "Press Ctrl+C to stop.", "");
  return lines.join("\n");
}
