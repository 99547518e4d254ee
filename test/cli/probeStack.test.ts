/**
 * `probe --stack qa` before the first `pulumi up`, as a user runs it with AWS credentials and no AWS_REGION: the SDK
 * calls go to the stack's aws:region (the stand-in below records each request's signing region) and nothing but the
 * probe's own answer is printed (no SDK deprecation block). Without AWS credentials it says how to give them and
 * still checks every host the stack names.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import type { AddressInfo } from "node:net";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { PROJECT_ROOT, runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";

/** Secrets Manager and S3 of an account where the stack is not deployed yet: every secret and object is missing. */
function startUndeployedAws() {
  const regions: string[] = [];
  const server = http.createServer((req, res) => {
    const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(req.headers.authorization ?? "");
    regions.push(scope?.[1] ?? "(unsigned)");
    req.resume();
    req.on("end", () => {
      if (String(req.headers["x-amz-target"] ?? "").startsWith("secretsmanager.")) {
        res.writeHead(400, { "content-type": "application/x-amz-json-1.1" });
        res.end(
          JSON.stringify({
            __type: "ResourceNotFoundException",
            message: "Secrets Manager can't find the specified secret.",
          }),
        );
      } else {
        res.writeHead(404, { "content-type": "application/xml" });
        res.end(
          '<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
        );
      }
    });
  });
  return new Promise<{ url: string; regions: string[]; close(): Promise<void> }>((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        regions,
        close: () => new Promise((done) => server.close(() => done())),
      }),
    ),
  );
}

describe("probe --stack before a deployment", () => {
  let aws: Awaited<ReturnType<typeof startUndeployedAws>>;
  beforeAll(async () => {
    aws = await startUndeployedAws();
  });
  afterAll(async () => aws?.close());

  it("uses the stack's aws:region, prints no deprecation warning, and names what is missing", async () => {
    const stackRegion = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8")).config["aws:region"];
    const r = await runMain(["probe", "--file", fixtureStackFile("qa")], {
      env: {
        AWS_ENDPOINT_URL: aws.url,
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
        AWS_REGION: undefined,
        AWS_DEFAULT_REGION: undefined,
        AWS_PROFILE: undefined,
        AWS_CONFIG_FILE: path.join(PROJECT_ROOT, "no-such-aws-config"),
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: undefined,
        NODE_OPTIONS: undefined,
      },
    });
    expect(r.stderr).not.toMatch(/Warning|Region is missing/);
    expect(aws.regions.length).toBeGreaterThan(0);
    expect(new Set(aws.regions)).toEqual(new Set([stackRegion]));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^missing credential files in the scripts folder s3:\/\/acme-platform-qa\/Tools\/hub_python_scripts\/:\n/,
    );
    expect(r.stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
  });

  it("without AWS credentials: says how to give them (AWS_PROFILE, SSO) and still checks each host it can reach", async () => {
    // The stack's hub and queue hosts: a server on loopback (a stack that may point there: not qa or prod).
    const hub = http.createServer((_req, res) => res.end());
    await new Promise<void>((resolve) => hub.listen(0, "127.0.0.1", () => resolve()));
    const base = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;
    try {
      const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8")) as { config: Record<string, any> };
      const apis = { ERS: `${base}/ers/api/`, CFG: `${base}/cfg/api/`, HRSYS: `${base}/hrsys/api/` };
      doc.config["hubExport:hub"] = { allowLoopback: true, default: { environmentName: "hub-qa", apis } };
      for (const queue of Object.values<Record<string, unknown>>(doc.config["hubExport:queues"])) queue.baseUrl = base;
      const file = path.join(PROJECT_ROOT, ".tmp", `Pulumi.probe-${process.pid}.yaml`);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, YAML.stringify(doc));
      try {
        const none = path.join(PROJECT_ROOT, "no-such-aws-config");
        const r = await runMain(["probe", "--file", file, "--json"], {
          env: {
            AWS_ENDPOINT_URL: aws.url,
            AWS_ACCESS_KEY_ID: undefined,
            AWS_SECRET_ACCESS_KEY: undefined,
            AWS_SESSION_TOKEN: undefined,
            AWS_PROFILE: undefined,
            AWS_CONFIG_FILE: none,
            AWS_SHARED_CREDENTIALS_FILE: none,
            AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
            AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
            AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
            // No instance role either (an EC2 CI runner would have one).
            AWS_EC2_METADATA_DISABLED: "true",
          },
        });
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr).toBe("");
        const report = JSON.parse(r.stdout) as {
          checks: { endpoint: string; check: string; result: string; verdict: string }[];
        };
        const credentials = report.checks.find((c) => c.endpoint === "AWS credentials")!;
        expect(credentials.verdict).toBe("FAIL");
        expect(credentials.result).toContain(
          "set AWS_PROFILE=<profile> of the stack's account (with SSO, run 'aws sso login --profile <profile>' first)",
        );
        expect(credentials.result).toContain(
          "tenant_credentials.txt in s3://acme-platform-qa/Tools/hub_python_scripts/",
        );
        // Every host the stack names is still looked at: here one, on loopback, reached.
        const host = `host 127.0.0.1:${(hub.address() as AddressInfo).port}`;
        expect(report.checks.filter((c) => c.endpoint === host).map((c) => `${c.check} ${c.verdict}`)).toEqual([
          "dns ok",
          "reach ok",
          "tls skip",
        ]);
        expect(report.checks.filter((c) => c.verdict === "skip" && c.check !== "tls").map((c) => c.endpoint)).toEqual([
          "queue US (HUB_MQ_US_QA)",
          "queue EU (HUB_MQ_EU_QA)",
          "tenant ACME_US_QA",
          "tenant ACME_EU_QA",
        ]);
      } finally {
        fs.rmSync(file, { force: true });
      }
    } finally {
      await new Promise((done) => hub.close(done));
    }
  });
});
