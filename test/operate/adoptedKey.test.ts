/**
 * A stack's given KMS key checked with AWS credentials (operate/adoptedKey.ts, cli/adoptedKey.ts): the real KMS and STS
 * clients against loopback stand-ins (KMS: awsJson1_1, as the service speaks it; STS: test/support/stsStandIn.ts),
 * the key policy read with kms:GetKeyPolicy (an alias resolved first), what it lacks as the probe's rows.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { adoptedKeyChecks } from "../../cli/adoptedKey";
import { keyPolicy } from "../../components/policies";
import { loadStackConfig } from "../../config/load";
import { enableIamPoliciesStatement } from "../../core/keyPolicy";
import { adoptedKeyCheckResults, checkAdoptedKey, principalOfCaller } from "../../operate/adoptedKey";
import { fixtureStackFile } from "../fixtures/stacks";
import { startStsStandIn, type StsStandIn } from "../support/stsStandIn";

const ACCOUNT = "210987654321";
const KEY = `arn:aws:kms:us-east-1:${ACCOUNT}:key/6e1f0c2a-93b4-4d5e-8f7a-1b2c3d4e5f60`;
const ALIAS = `arn:aws:kms:us-east-1:${ACCOUNT}:alias/platform-prod`;
const LOG_GROUP = "/ecs/hub-export-acme-prod";

/** The loopback KMS: each key's policy (or an error), the aliases, and the calls it answered. */
interface KmsStandIn {
  url: string;
  policies: Map<string, string | { error: string }>;
  aliases: Map<string, string>;
  calls: { target: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

async function startKmsStandIn(): Promise<KmsStandIn> {
  const standIn: Omit<KmsStandIn, "url" | "close"> = { policies: new Map(), aliases: new Map(), calls: [] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"]).replace(/^TrentService\./, "");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
      standIn.calls.push({ target, body });
      const reply = (status: number, doc: unknown) =>
        res.writeHead(status, { "content-type": "application/x-amz-json-1.1" }).end(JSON.stringify(doc));
      const keyId = String(body.KeyId);
      const arn = standIn.aliases.get(keyId) ?? keyId;
      const policy = standIn.policies.get(arn);
      if (policy === undefined) reply(400, { __type: "NotFoundException", message: `Key '${keyId}' does not exist` });
      else if (typeof policy !== "string") reply(400, { __type: policy.error, message: `not allowed: ${target}` });
      else if (target === "DescribeKey") reply(200, { KeyMetadata: { Arn: arn, KeyId: arn.split("/").pop() } });
      else if (target === "GetKeyPolicy") reply(200, { Policy: policy, PolicyName: "default" });
      else reply(400, { __type: "UnsupportedOperationException", message: target });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    ...standIn,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let kms: KmsStandIn;
let sts: StsStandIn;
beforeAll(async () => {
  [kms, sts] = await Promise.all([startKmsStandIn(), startStsStandIn({ AKIADEPLOYER00000000: ACCOUNT })]);
});
afterAll(async () => {
  await Promise.all([kms?.close(), sts?.close()]);
});
beforeEach(() => {
  kms.policies.clear();
  kms.aliases.clear();
  kms.calls.length = 0;
  vi.stubEnv("AWS_ENDPOINT_URL_KMS", kms.url);
  vi.stubEnv("AWS_ENDPOINT_URL_STS", sts.url);
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIADEPLOYER00000000");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "secret");
  vi.stubEnv("AWS_SESSION_TOKEN", "");
  vi.stubEnv("AWS_PROFILE", "");
});

const SCOPE = { partition: "aws", region: "us-east-1", accountId: ACCOUNT };
const input = { keyArn: KEY, logGroupName: LOG_GROUP, taskRoleName: "hub-export-acme-prod-task" };

describe("a given KMS key, checked", () => {
  it("an alias is resolved, the default key policy lacks CloudWatch Logs: one row with the statement to add", async () => {
    kms.aliases.set(ALIAS, KEY);
    kms.policies.set(
      KEY,
      JSON.stringify({ Version: "2012-10-17", Statement: [enableIamPoliciesStatement("aws", ACCOUNT)] }),
    );
    const check = await checkAdoptedKey({ ...input, keyArn: ALIAS });
    expect(kms.calls).toEqual([
      { target: "DescribeKey", body: { KeyId: ALIAS } },
      { target: "GetKeyPolicy", body: { KeyId: KEY, PolicyName: "default" } },
    ]);
    // The caller, the deployer, is checked too: the root statement enables its IAM policies.
    expect("users" in check && check.users.map((u) => u.arn)).toEqual([
      `arn:aws:iam::${ACCOUNT}:role/hub-export-acme-prod-task`,
      `arn:aws:iam::${ACCOUNT}:user/AKIADEPLOYER00000000`,
    ]);
    const rows = adoptedKeyCheckResults(check);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      endpoint: `KMS key ${KEY}`,
      check: `key policy: CloudWatch Logs, for the task's log group ${LOG_GROUP}`,
      verdict: "FAIL",
      required: true,
    });
    expect(rows[0].result).toContain(
      `add: {"Sid":"EncryptTheTaskLogGroup","Effect":"Allow","Principal":{"Service":"logs.us-east-1.amazonaws.com"}`,
    );
  });

  it("a key policy like the stack's own: one ok row", async () => {
    kms.policies.set(KEY, JSON.stringify(keyPolicy(SCOPE, LOG_GROUP)));
    expect(adoptedKeyCheckResults(await checkAdoptedKey(input))).toEqual([
      {
        endpoint: `KMS key ${KEY}`,
        check: "key policy",
        result:
          "lets CloudWatch Logs use it for the task's log group, and the task role and the deployer through IAM or by name",
        latencyMs: null,
        verdict: "ok",
        required: false,
      },
    ]);
  });

  it("a policy it may not read: one line naming the action and what to do", async () => {
    kms.policies.set(KEY, { error: "AccessDeniedException" });
    const [row] = adoptedKeyCheckResults(await checkAdoptedKey(input));
    expect(row.verdict).toBe("FAIL");
    expect(row.result).toBe(
      `cannot read the key policy (kms:GetKeyPolicy): AccessDeniedException: not allowed: GetKeyPolicy; run this with credentials of account ${ACCOUNT} that may read it, or ask the key's administrators to check it against docs/pulumi.md's prerequisites`,
    );
    expect(adoptedKeyCheckResults(await checkAdoptedKey({ ...input, keyArn: "alias/platform" }))[0].result).toBe(
      "alias/platform is not a KMS key or alias ARN",
    );
  });

  it("probe's check of a stack: prod's given key, by the stack's names; none for a stack that creates its key", async () => {
    kms.policies.set(KEY, JSON.stringify(keyPolicy(SCOPE, LOG_GROUP)));
    const prod = loadStackConfig({ file: fixtureStackFile("prod"), stack: "prod" });
    expect((await adoptedKeyChecks(prod)).map((r) => r.verdict)).toEqual(["ok"]);
    expect(kms.calls.map((c) => c.body.KeyId)).toEqual([prod.bucket.kmsKeyArn]);
    const qa = loadStackConfig({ file: fixtureStackFile("qa"), stack: "qa" });
    expect(await adoptedKeyChecks(qa)).toEqual([]);
  });

  it("names an assumed role's session by its role", () => {
    expect(principalOfCaller(`arn:aws:sts::${ACCOUNT}:assumed-role/platform-deployer/ci-123`)).toBe(
      `arn:aws:iam::${ACCOUNT}:role/platform-deployer`,
    );
    expect(principalOfCaller(`arn:aws:iam::${ACCOUNT}:user/alice`)).toBe(`arn:aws:iam::${ACCOUNT}:user/alice`);
  });
});
