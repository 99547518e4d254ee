/**
 * `probe --stack qa` before the first `pulumi up`, as a user runs it with AWS credentials and no AWS_REGION: the SDK
 * calls go to the stack's aws:region (the stand-in below records each request's signing region) and nothing but the
 * probe's own answer is printed (no SDK deprecation block).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import type { AddressInfo } from "node:net";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { PROJECT_ROOT, runCli } from "../support/cli";
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
        res.end(JSON.stringify({ __type: "ResourceNotFoundException", message: "Secrets Manager can't find the specified secret." }));
      } else {
        res.writeHead(404, { "content-type": "application/xml" });
        res.end("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>");
      }
    });
  });
  return new Promise<{ url: string; regions: string[]; close(): Promise<void> }>((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, regions, close: () => new Promise((done) => server.close(() => done())) }),
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
    const r = await runCli(["probe", "--file", fixtureStackFile("qa")], {
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
    expect(r.stderr).toMatch(/^missing credential files in the scripts folder s3:\/\/acme-platform-qa\/Tools\/hub_python_scripts\/:\n/);
    expect(r.stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
  });
});
