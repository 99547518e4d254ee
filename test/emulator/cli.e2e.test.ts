import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolveConfig, loadConfigFile } from "../../emulator/config";
import { UserError } from "../../core/errors";
import { DEV_QUEUES, DEV_TENANTS, TENANT_US } from "./helpers";
import { BIN, runCli } from "../support/cli";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "emulator-cli-test-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

function writeConfig(name: string, config: unknown): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  return file;
}

/** Runs `hub-export emulator ...` to completion (for the failing cases). */
const runToExit = (args: string[]) => runCli(["emulator", ...args]);

/** Starts `hub-export emulator ...` and waits until its output holds `until`. */
function startUntil(
  args: string[],
  until: RegExp,
): Promise<{ child: ChildProcess; output: () => string; exit: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "emulator", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let stdout = "";
    let stderr = "";
    const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.on("data", (d) => {
      stdout += d;
      if (until.test(stdout)) resolve({ child, output: () => stdout, exit });
    });
    void exit.then((code) => reject(new Error(`exited with ${code} before ready: ${stderr}`)));
  });
}

describe("hub-export emulator", () => {
  it("prints its URLs and dev credentials, serves them, and stops on SIGTERM", async () => {
    const { child, output, exit } = await startUntil(["--port", "0"], /Press Ctrl\+C to stop/);
    const text = output();
    const url = (label: RegExp) => label.exec(text)?.[1];
    const us = url(/^ {2}US +(http:\/\/127\.0\.0\.1:\d+\/mq\/us)\b/m);
    const cfg = url(/^ {2}CFG +(http:\/\/\S+\/api\/)$/m);
    const state = url(/^State +(http:\/\/\S+)/m);
    expect(us).toBeDefined();
    expect(cfg).toMatch(/\/cfg\/api\/$/);
    expect(url(/^ {2}ERS +(\S+)$/m)).toMatch(/\/ers\/api\/$/);
    expect(url(/^ {2}HRSYS +(\S+)$/m)).toMatch(/\/hrsys\/api\/$/);
    // The built-in dev credentials are printed, since they are the only way to use the default emulator.
    expect(text).toContain(DEV_QUEUES.US.clientSecret);
    expect(text).toContain(DEV_TENANTS[TENANT_US].clientSecret);

    const res = await fetch(state!);
    expect(res.status).toBe(200);
    const auth = await fetch(`${us}/api/v1/authorize`, {
      method: "POST",
      body: new URLSearchParams({
        client_id: DEV_QUEUES.US.clientId,
        client_secret: DEV_QUEUES.US.clientSecret,
        grant_type: "client_credentials",
      }),
    });
    expect(auth.status).toBe(200);

    child.kill("SIGTERM");
    expect(await exit).toBe(0);
    expect(output()).toContain("Emulator stopped.");
  });

  it("with --json prints one JSON line of URLs; with --config it never prints secrets", async () => {
    const secret = "file-secret-do-not-print";
    const config = writeConfig("ok.json", {
      queues: { US: { clientId: "file-client", clientSecret: secret, orgId: "org-1", envId: "env-1" } },
      tenants: { [TENANT_US]: { clientId: "tenant-client", clientSecret: secret } },
    });
    const { child, output, exit } = await startUntil(
      [
        "--port",
        "0",
        "--json",
        "--config",
        config,
        "--faults",
        "queue.publish:503=0.1",
        "--seed",
        "9",
        "--latency",
        "queue=5ms±2",
        "--rate-limit",
        "ers=10/s",
        "--no-retry-after",
      ],
      /\n/,
    );
    const line = JSON.parse(output().split("\n")[0]) as {
      urls: { queues: Record<string, string>; state: string };
      faults: unknown;
      link: unknown;
    };
    expect(line.faults).toEqual({ seed: 9, spec: "queue.publish:503=0.1" });
    expect(line.link).toEqual({ latency: "queue=5ms±2", rateLimit: "ers=10/s@10", retryAfter: false });
    const state = (await (await fetch(line.urls.state)).json()) as { faults: { seed: number; rules: unknown } };
    expect(state.faults).toMatchObject({ seed: 9, rules: { "queue.publish": { 503: 0.1 } } });
    const auth = await fetch(`${line.urls.queues.US}/api/v1/authorize`, {
      method: "POST",
      body: new URLSearchParams({ client_id: "file-client", client_secret: secret, grant_type: "client_credentials" }),
    });
    expect(auth.status).toBe(200);
    expect(output()).not.toContain(secret);
    child.kill("SIGINT");
    expect(await exit).toBe(0);

    const banner = await startUntil(["--port", "0", "--config", config], /Press Ctrl\+C to stop/);
    expect(banner.output()).toContain("file-client");
    expect(banner.output()).not.toContain(secret);
    banner.child.kill("SIGTERM");
    expect(await banner.exit).toBe(0);
  });

  it.each([
    [["--faults", "queue.publish:503=2"], /--faults: .*503 must be a rate between 0 and 1/],
    [["--faults", "queue.nope:503=0.1"], /--faults: .*unknown endpoint 'queue.nope'/],
    [["--seed", "1.5"], /--seed: seed must be an integer/],
    [
      ["--latency", "queue=40ms±50"],
      /--latency: rule 1 \('queue=40ms±50'\): the jitter \(50\) must not exceed the fixed latency \(40\)/,
    ],
    [["--rate-limit", "queue=fast"], /--rate-limit: rule 1 \('queue=fast'\): expected a rate like 2000\/s/],
    [["--port", "70000"], /--port must be an integer from 0 to 65535/],
    [["--bogus"], /unknown option '--bogus'/],
    [["--port", "-1"], /--port must be an integer from 0 to 65535, got '-1'/],
  ])("exits 2 on bad usage %j", async (args, message) => {
    const r = await runToExit(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain("(see 'hub-export emulator --help')");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stdout).toBe("");
  });

  it("exits 1 with one line per problem for a bad config file, never quoting secrets", async () => {
    const file = writeConfig("bad.json", {
      queues: { EU: { clientId: "c", clientSecret: "very-secret-value", orgId: "has space", envId: "e" } },
      tenants: { "not-a-uuid": { clientId: "t", clientSecret: "very-secret-value" } },
      ersMaxBatch: 0,
      extra: 1,
    });
    const r = await runToExit(["--config", file]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines[0]).toBe(`${file}: invalid configuration (4 problems)`);
    expect(lines.slice(1)).toEqual([
      "queues.EU.orgId: must hold only letters, digits, _ . ~ - (1 to 128)",
      "tenants.not-a-uuid: tenant ids must be UUIDs (8-4-4-4-12 hex digits)",
      "ersMaxBatch: must be a positive integer",
      "(config): unknown key 'extra'",
    ]);
    expect(r.stderr).not.toContain("very-secret-value");
  });

  it("exits 1 when the config file is missing or not JSON", async () => {
    const missing = await runToExit(["--config", path.join(tmp, "absent.json")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read the config file \(ENOENT\)/);
    const notJson = await runToExit(["--config", writeConfig("notjson.json", "{queues:")]);
    expect(notJson.code).toBe(1);
    expect(notJson.stderr).toMatch(/not valid JSON/);
  });
});

describe("emulator config", () => {
  it("fills regions left out from the dev config and replaces the tenants when given", () => {
    const config = resolveConfig({
      queues: { EU: { clientId: "a", clientSecret: "b", orgId: "o", envId: "e" } },
      tenants: {},
    });
    expect(config.queues.US).toEqual(DEV_QUEUES.US);
    expect(config.queues.EU).toEqual({ clientId: "a", clientSecret: "b", orgId: "o", envId: "e" });
    expect(config.tenants).toEqual({});
    expect(config).toMatchObject({
      tokenTtlSeconds: 3600,
      ersMaxBatch: 100,
      retainBodies: true,
      rejectDestinations: [],
    });
    expect(resolveConfig(undefined).tenants).toEqual(DEV_TENANTS);
  });

  it("reports problems as UserError lines with key paths", () => {
    let error: unknown;
    try {
      resolveConfig({ tokenTtlSeconds: -1, rejectDestinations: ["ok", "bad name"], queues: { US: { clientId: "" } } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).lines).toEqual([
      "emulator config: invalid configuration (6 problems)",
      "queues.US.clientId: must not be empty",
      "queues.US.clientSecret: is required",
      "queues.US.orgId: is required",
      "queues.US.envId: is required",
      "tokenTtlSeconds: must be a positive number",
      "rejectDestinations[1]: must hold only letters, digits, _ . - (1 to 128)",
    ]);
  });

  it("loads a file", () => {
    expect(loadConfigFile(writeConfig("small.json", { ersMaxBatch: 7 })).ersMaxBatch).toBe(7);
  });
});
