/**
 * Tags: every AWS resource of a stack goes through the stack's provider, whose default tags name the project, the
 * stack, the client and the environment; the provider reads the `aws:` config as the default provider would.
 */
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it } from "vitest";
import { awsProviderArgs, stackTags } from "../../components/awsProvider";
import { fixtureStack } from "../fixtures/stacks";
import { inputs, isSecretInput, ofType, planOf } from "../fixtures/plan";

describe("tags on every AWS resource", () => {
  it.each(["qa", "prod"] as const)(
    "stack %s: one AWS provider with the four tags, and every AWS resource uses it",
    async (stack) => {
      const run = await planOf(fixtureStack(stack).config, stack);
      const [provider] = ofType(run, "pulumi:providers:aws");
      expect(ofType(run, "pulumi:providers:aws")).toHaveLength(1);
      // A provider's object and list inputs travel as JSON text, as the engine hands them to the provider.
      expect(JSON.parse(inputs(provider).defaultTags)).toEqual({
        tags: { project: "hub-export", stack, client: "ACME", environment: stack.toUpperCase() },
      });
      // The stack's own aws: settings, the account ids as text.
      expect(inputs(provider).region).toBe("us-east-1");
      expect(JSON.parse(inputs(provider).allowedAccountIds)).toEqual([
        stack === "qa" ? "111111111111" : "210987654321",
      ]);
      const aws = run.resources.filter((r) => r.type.startsWith("aws:"));
      expect(aws.length).toBeGreaterThan(30);
      for (const r of aws)
        expect(r.provider?.split("::").slice(0, -1).join("::"), `${r.type} ${r.name}`).toBe(provider.urn);
      // Taggable kinds among them (default tags reach each of them): buckets and objects, keys, secrets, roles, the
      // repository, cluster, task definition, log group, topic, rules, queue and alarms.
      const types = new Set(aws.map((r) => r.type));
      for (const t of [
        "aws:kms/key:Key",
        "aws:secretsmanager/secret:Secret",
        "aws:iam/role:Role",
        "aws:ecs/taskDefinition:TaskDefinition",
        "aws:cloudwatch/logGroup:LogGroup",
        "aws:sns/topic:Topic",
        "aws:sqs/queue:Queue",
        "aws:cloudwatch/metricAlarm:MetricAlarm",
        "aws:s3/bucketObjectv2:BucketObjectv2",
      ]) {
        expect(types, t).toContain(t);
      }
    },
  );

  it("reads the aws: config as the default provider would: typed values, account ids as text, secrets kept secret, own tags kept", async () => {
    const args = awsProviderArgs(
      {
        "aws:region": "eu-central-1",
        "aws:allowedAccountIds": "[123456789012]",
        "aws:forbiddenAccountIds": "[210987654321]",
        "aws:maxRetries": "5",
        "aws:skipMetadataApiCheck": "false",
        "aws:secretKey": "abc/def",
        "aws:defaultTags": JSON.stringify({ tags: { costCenter: "4711", client: "overridden" } }),
        "hubExport:clientName": "ACME",
      },
      stackTags({ clientName: "ACME", environment: "QA" }, "acme-qa"),
      (key) => key === "aws:secretKey",
    );
    expect(args).toMatchObject({
      region: "eu-central-1",
      allowedAccountIds: ["123456789012"],
      forbiddenAccountIds: ["210987654321"],
      maxRetries: 5,
      skipMetadataApiCheck: false,
    });
    expect(args.defaultTags).toEqual({
      tags: { costCenter: "4711", project: "hub-export", stack: "acme-qa", client: "ACME", environment: "QA" },
    });
    expect(pulumi.Output.isInstance(args.secretKey)).toBe(true);
    expect(await new Promise((resolve) => (args.secretKey as pulumi.Output<string>).apply(resolve))).toBe("abc/def");
    expect(Object.keys(args)).not.toContain("clientName");
  });

  it("keeps a secret aws: setting secret in the provider's inputs", async () => {
    const config = { ...fixtureStack("qa").config, "aws:accessKey": "AKIAEXAMPLE0000", "aws:token": "session-token" };
    const run = await planOf(config, "qa");
    const [provider] = ofType(run, "pulumi:providers:aws");
    expect(inputs(provider)).toMatchObject({ accessKey: "AKIAEXAMPLE0000", token: "session-token" });
    expect(isSecretInput(provider, "accessKey")).toBe(true);
    expect(isSecretInput(provider, "token")).toBe(true);
  });
});
