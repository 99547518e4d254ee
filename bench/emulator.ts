/**
 * Load benchmark of the emulator's queue broker: publishes N messages in batches over keep-alive connections, several
 * requests in flight, and prints requests/s and messages/s. The emulator runs in a child process
 * (`hub-export emulator`), so that client and server do not share one event loop.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseCommandArgs, type Options as CommandOptions } from "../cli/command";
import { Pool, request } from "undici";
import {
  QUEUE_API,
  DATA_DOMAIN_CODE,
  ENTITY_NAME,
  authorizeResponseSchema,
  queueAuthUrl,
  queueMessagesUrl,
  queueOrganizationsUrl,
} from "../core/hubContract";
import { DEV_QUEUES } from "../emulator/config";
import type { EmulatorState, EmulatorUrls } from "../emulator";
import { UsageError } from "../core/errors";
import { startEmulatorProcess } from "./platform";

const QUEUE = "bench-empl-us";

export async function main(argv: string[]): Promise<void> {
  const opts = parseOptions(argv);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-"));
  const configFile = path.join(dir, "emulator.json");
  fs.writeFileSync(configFile, JSON.stringify({ retainBodies: opts.retainBodies }));
  const started = startEmulatorProcess(configFile, []);
  try {
    await run((await started).urls, opts);
  } finally {
    await started.then(
      (e) => stop(e.child),
      () => {},
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function run(urls: EmulatorUrls, opts: ReturnType<typeof parseOptions>): Promise<void> {
  const us = DEV_QUEUES.US;
  const auth = await request(queueAuthUrl(urls.queues.US), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      client_id: us.clientId,
      client_secret: us.clientSecret,
      grant_type: "client_credentials",
    }).toString(),
  });
  if (auth.statusCode !== 200) throw new Error(`authorize answered ${auth.statusCode}`);
  const token = authorizeResponseSchema.parse(await auth.body.json());
  const { orgId, envId } = token.simple_client;
  const messagesPath = new URL(queueMessagesUrl(queueOrganizationsUrl(urls.queues.US), orgId, envId, QUEUE)).pathname;
  const headers = { authorization: `bearer ${token.access_token}`, "content-type": "application/json" };

  const pool = new Pool(urls.base, { connections: opts.concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  const batches = Math.ceil(opts.messages / opts.batch);
  const runId = Date.now().toString(36);
  const body = JSON.stringify(sampleBody(opts.bodyBytes));
  const latencies = new Float64Array(batches);
  let next = 0;
  let failures = 0;
  let firstFailure = "";

  const worker = async () => {
    for (let b = next++; b < batches; b = next++) {
      const first = b * opts.batch;
      const count = Math.min(opts.batch, opts.messages - first);
      const started = performance.now();
      const res = await pool.request({
        path: messagesPath,
        method: "PUT",
        headers,
        body: batchJson(runId, first, count, body),
      });
      const text = await res.body.text();
      latencies[b] = performance.now() - started;
      // Check every element, as a real client must.
      const ok =
        res.statusCode === 201 &&
        (JSON.parse(text) as Array<{ status: string }>).every((r) => r.status === "successful");
      if (!ok) {
        failures++;
        firstFailure ||= `${res.statusCode} ${text.slice(0, 200)}`;
      }
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();

  const stateRes = await request(urls.state);
  const state = (await stateRes.body.json()) as EmulatorState;
  const dest = state.queues.US.destinations[QUEUE];

  latencies.sort();
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))].toFixed(1);
  const out = process.stdout;
  out.write(
    [
      `emulator benchmark: ${opts.messages} messages in ${batches} batches of ${opts.batch}, ${opts.concurrency} in flight, ` +
        `bodies ~${opts.bodyBytes} bytes, ${opts.retainBodies ? "bodies retained" : "bodies not retained"}`,
      `  elapsed      ${seconds.toFixed(2)} s`,
      `  requests/s   ${Math.round(batches / seconds)}`,
      `  messages/s   ${Math.round(opts.messages / seconds)}`,
      `  latency      p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms`,
      `  stored       ${dest?.count ?? 0} messages, ${dest?.duplicates ?? 0} duplicates, ${((dest?.bytes ?? 0) / 1e6).toFixed(1)} MB of bodies`,
      "",
    ].join("\n"),
  );
  if (failures > 0) throw new Error(`${failures} batches failed; first: ${firstFailure}`);
  if (dest?.count !== opts.messages)
    throw new Error(`the emulator stored ${dest?.count ?? 0} messages, expected ${opts.messages}`);
}

/** A batch as JSON text, built by concatenation: the client must not be the bottleneck. */
function batchJson(runId: string, first: number, count: number, bodyJson: string): string {
  const parts: string[] = [];
  for (let i = first; i < first + count; i++) {
    const id = `${runId}-${i}`;
    parts.push(
      `{"properties":{"transactionId":"${runId}","tenantId":"11111111-1111-4111-8111-111111111111","systemCode":"HRSYS",` +
        `"dataDomainCode":"${DATA_DOMAIN_CODE}","entityName":"${ENTITY_NAME}","recordCount":"1"},"headers":{"messageId":"${id}"},"body":${bodyJson}}`,
    );
  }
  return `[${parts.join(",")}]`;
}

/** A message body shaped like the export's (header + one User), padded to about `bytes`. */
function sampleBody(bytes: number): string {
  const message = {
    header: {
      transactionId: "bench",
      tenantId: "11111111-1111-4111-8111-111111111111",
      systemCode: "HRSYS",
      dataDomainCode: DATA_DOMAIN_CODE,
      entityName: ENTITY_NAME,
      recordCount: 1,
      createdAt: new Date(0).toISOString(),
    },
    entities: [
      { UserId: "E000001", FirstName: "Ada", LastName: "Lovelace", CountryCode: "US", Status: "ACTV", Notes: "" },
    ],
  };
  const base = JSON.stringify(message).length;
  message.entities[0].Notes = "x".repeat(Math.max(0, bytes - base));
  return JSON.stringify(message);
}

export const summary =
  "Load on the emulator's queue broker (in a child process): N messages in batches over keep-alive connections; requests/s and messages/s";
export const options = {
  messages: {
    type: "string",
    value: "N",
    description: "Messages to publish",
    default: "100000",
    example: "--messages 1000000",
  },
  batch: {
    type: "string",
    value: "N",
    description: `Messages per request (1 to ${QUEUE_API.maxBatchSize})`,
    default: String(QUEUE_API.maxBatchSize),
    example: "--batch 1",
  },
  concurrency: {
    type: "string",
    value: "N",
    description: "Requests in flight",
    default: "16",
    example: "--concurrency 64",
  },
  "body-bytes": {
    type: "string",
    value: "N",
    description: "Size of each message body",
    default: "1024",
    example: "--body-bytes 65536",
  },
  "retain-bodies": {
    type: "boolean",
    description: "Keep message bodies in the emulator's memory (as the tests do) instead of only their sizes",
    example: "--retain-bodies",
  },
} satisfies CommandOptions;

function parseOptions(argv: string[]) {
  const values = parseCommandArgs(options, argv);
  const int = (name: string, value: string | undefined, max: number) => {
    if (value === undefined) throw new UsageError(`--${name} is required`);
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
      throw new UsageError(`--${name} must be an integer from 1 to ${max}, got '${value}'`);
    return Number(value);
  };
  return {
    messages: int("messages", values.messages, 10_000_000),
    batch: int("batch", values.batch, QUEUE_API.maxBatchSize),
    concurrency: int("concurrency", values.concurrency, 1024),
    bodyBytes: int("body-bytes", values["body-bytes"], 1024 * 1024),
    retainBodies: values["retain-bodies"] ?? false,
  };
}

/** SIGTERM, then SIGKILL after 10 s. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
