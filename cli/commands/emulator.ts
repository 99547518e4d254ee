/** `hub-export emulator`: the local hub and queue emulator, standalone, until SIGINT or SIGTERM. */
import { defineCommand } from "../command";
import { UsageError, UserError } from "../../core/errors";
import { encodeCredentialsString } from "../../core/credentials";
import { HUB_REGIONS } from "../../core/regions";
import { loadConfigFile, resolveConfig, type EmulatorConfig } from "../../emulator/config";
import { DEFAULT_SEED, FaultSpecError, formatFaultRules, parseFaultSpec, parseSeed } from "../../emulator/faults";
import { startEmulator, type Emulator } from "../../emulator";
import { formatLinkSettings, parseLatencySpec, parseRateLimitSpec, resolveLinkSettings } from "../../emulator/link";
import { untilStopSignal } from "../signals";

export default defineCommand({
  summary: "Run the local hub and queue emulator (loopback HTTP, with fault injection)",
  usage: "hub-export emulator [--port N] [--config PATH] [--faults SPEC] [--seed N] [--latency SPEC] [--rate-limit SPEC] [--no-retry-after] [--json] [--verbose]",
  options: {
    port: { type: "string" },
    config: { type: "string" },
    faults: { type: "string" },
    seed: { type: "string" },
    /** A remote hub: round trips per API and region, e.g. `queue=40ms±10,ers=80ms` (emulator/link.ts). */
    latency: { type: "string" },
    /** Token-bucket limits per API and region, e.g. `queue=2000/s,ers=50/s`: over them, 429. */
    "rate-limit": { type: "string" },
    /** 429 answers without Retry-After. */
    "no-retry-after": { type: "boolean" },
    /** One JSON line with the URLs instead of the text banner (for scripts and the benchmark). */
    json: { type: "boolean" },
    /** One line per request on stderr. */
    verbose: { type: "boolean" },
  },
  async run(values, io) {
    const port = parsePort(values.port);
    const seed = values.seed === undefined ? DEFAULT_SEED : asUsage("--seed", () => parseSeed(values.seed!));
    const rules = values.faults === undefined ? {} : asUsage("--faults", () => parseFaultSpec(values.faults!));
    const link = resolveLinkSettings({
      latency: asUsage("--latency", () => parseLatencySpec(values.latency ?? "")),
      rateLimit: asUsage("--rate-limit", () => parseRateLimitSpec(values["rate-limit"] ?? "")),
      retryAfter: !values["no-retry-after"],
    });
    const config = values.config !== undefined ? loadConfigFile(values.config) : resolveConfig(undefined);

    let emulator: Emulator;
    try {
      emulator = await startEmulator({
        port,
        config,
        faults: { rules },
        seed,
        link,
        log: values.verbose ? (line) => io.stderr.write(line + "\n") : undefined,
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EADDRINUSE" || code === "EACCES") throw new UserError(`emulator: cannot listen on 127.0.0.1:${port} (${code})`);
      throw err;
    }

    // Listen for the signals before printing: whoever reads the URLs may stop us at once.
    const stopped = untilStopSignal();
    if (values.json) {
      io.stdout.write(JSON.stringify({ urls: emulator.urls, faults: { seed, spec: formatFaultRules(rules) }, link: formatLinkSettings(link) }) + "\n");
    } else {
      io.stdout.write(banner(emulator, { seed, faults: formatFaultRules(rules), link: formatLinkSettings(link), devCredentials: values.config === undefined }));
    }

    await stopped;
    await emulator.close();
    if (!values.json) io.stdout.write("Emulator stopped.\n");
    return 0;
  },
});

/** A bad --faults or --seed is wrong usage (exit 2), reported with the option's name. */
function asUsage<T>(option: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof FaultSpecError) throw new UsageError(`${option}: ${err.message}`);
    throw err;
  }
}

function parsePort(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, got '${value}'`);
  return Number(value);
}

/** URLs, ids and, for the built-in dev config only, its credentials (they are dev-only; a config file's never show). */
function banner(emulator: Emulator, opts: { seed: number; faults: string; link: ReturnType<typeof formatLinkSettings>; devCredentials: boolean }): string {
  const { urls, config } = emulator;
  const width = Math.max(...HUB_REGIONS.map((r) => urls.queues[r].length));
  const lines = [
    `Hub emulator listening on ${urls.base} (loopback only)`,
    "",
    "Queue brokers (connection record: url = <base>/api/v1/organizations/, authUrl = <base>/api/v1/authorize):",
    ...HUB_REGIONS.map((r) => `  ${r.padEnd(5)} ${urls.queues[r].padEnd(width)}  orgId ${config.queues[r].orgId}  envId ${config.queues[r].envId}  clientId ${config.queues[r].clientId}`),
    "Hub APIs (hub_api_url):",
    `  CFG   ${urls.cfg}`,
    `  ERS   ${urls.ers}`,
    `  HRSYS ${urls.hrsys}`,
    `State   ${urls.state}  (POST ${urls.base}/_emulator/reset, POST ${urls.base}/_emulator/faults)`,
    `Faults  ${opts.faults} (seed ${opts.seed})`,
    `Link    latency ${opts.link.latency}; rate limit ${opts.link.rateLimit}${opts.link.rateLimit !== "none" ? `, 429 ${opts.link.retryAfter ? "with" : "without"} Retry-After` : ""}`,
    `Tenants ${Object.keys(config.tenants).join(", ") || "none"}`,
  ];
  if (opts.devCredentials) lines.push("", ...devCredentialLines(config));
  lines.push("", "Press Ctrl+C to stop.", "");
  return lines.join("\n");
}

function devCredentialLines(config: EmulatorConfig): string[] {
  return [
    "Built-in dev credentials (for local use only; never for a real hub):",
    ...HUB_REGIONS.map((r) => `  queue ${r.padEnd(5)} client_id ${config.queues[r].clientId}  client_secret ${config.queues[r].clientSecret}`),
    ...Object.entries(config.tenants).map(
      ([id, t]) => `  tenant ${id}  clientId ${t.clientId}  clientSecret ${t.clientSecret}  credentials string ${encodeCredentialsString(t)}`,
    ),
  ];
}
