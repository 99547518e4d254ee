/**
 * A given KMS key by its alias (`hubExport:bucket.kmsKeyArn: arn:...:alias/<name>`): IAM matches only key ARNs in a
 * statement's Resource, CloudWatch Logs takes a key ARN, and S3 reports an object's key by its key ARN. So the alias is
 * resolved to its key's ARN (aws.kms.getKey) and nothing of the plan holds the alias.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PlanRun } from "../../components/planner";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { inputs, planOf } from "../fixtures/plan";

const ALIAS = "arn:aws:kms:us-east-1:210987654321:alias/platform-prod-objects";
const KEY_ARN = /^arn:aws:kms:us-east-1:210987654321:key\/[0-9a-f-]{36}$/;

/** Every string of a value, with the path it is at. */
function strings(value: unknown, at: string, out: { at: string; text: string }[] = []): { at: string; text: string }[] {
  if (typeof value === "string") {
    out.push({ at, text: value });
    // Policies and container definitions are JSON text: their strings too.
    if (/^[[{]/.test(value)) {
      try {
        strings(JSON.parse(value), `${at}(json)`, out);
      } catch {
        // not JSON
      }
    }
  } else if (Array.isArray(value)) value.forEach((v, i) => strings(v, `${at}[${i}]`, out));
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) strings(v, `${at}.${k}`, out);
  return out;
}

describe("a KMS key given by its alias", () => {
  let run: PlanRun;
  beforeAll(async () => {
    const config = editKey<Record<string, unknown>>(fixtureStack("prod").config, "bucket", (b) => ({
      ...b,
      kmsKeyArn: ALIAS,
    }));
    run = await planOf(config, "prod");
  });

  it("reaches IAM, CloudWatch Logs, S3, Secrets Manager and the dynamic resources as its key's ARN only", () => {
    const found = run.resources.flatMap((r) => strings(inputs(r), `${r.type} ${r.name}`));
    // Every place that names the given key (its account's KMS) holds one and the same key ARN.
    const keyFields = found.filter((s) => s.text.startsWith("arn:aws:kms:us-east-1:210987654321:"));
    expect(keyFields.length).toBeGreaterThan(10);
    for (const s of keyFields) expect(s.text, s.at).toMatch(KEY_ARN);
    expect(new Set(keyFields.map((s) => s.text)).size).toBe(1);
    // The alias itself is nowhere.
    expect(found.filter((s) => s.text.includes(":alias/platform-prod")).map((s) => s.at)).toEqual([]);
    const taskPolicy = JSON.parse(inputs(run.resources.find((r) => inputs(r).name === "export-task-access")!).policy);
    expect(
      taskPolicy.Statement.find((s: { Sid: string }) => s.Sid === "DecryptThroughS3AndSecretsManager").Resource,
    ).toEqual([expect.stringMatching(KEY_ARN)]);
    const logGroup = run.resources.find((r) => r.type === "aws:cloudwatch/logGroup:LogGroup")!;
    expect(inputs(logGroup).kmsKeyId).toMatch(KEY_ARN);
  });
});
