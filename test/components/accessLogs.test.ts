/**
 * Server access logging of the bucket a stack creates (qa): to a log bucket the stack creates (SSE-S3, private, owner
 * enforced, S3's logging service allowed by bucket policy for this bucket and account only, logs expiring), or to the
 * log bucket `hubExport:bucket.accessLogs.bucket` names. An adopted bucket (prod) is the platform's: no logging set.
 */
import { describe, expect, it } from "vitest";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { inputs, ofType, one, outputs, planOf } from "../fixtures/plan";
import { configFromEngine } from "../../config/load";
import type { PolicyDocument } from "../../components/policies";
import { accessLogBucketName } from "../../components/naming";

const T = {
  bucket: "aws:s3/bucket:Bucket",
  logging: "aws:s3/bucketLogging:BucketLogging",
  policy: "aws:s3/bucketPolicy:BucketPolicy",
  encryption: "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
  ownership: "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
  access: "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
  lifecycle: "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
};

describe("server access logs of the created bucket", () => {
  it("go to a log bucket the stack creates, which only S3's logging for this bucket may write to", async () => {
    const qa = fixtureStack("qa").config;
    const config = configFromEngine(qa, "qa");
    const run = await planOf(qa, "qa");
    const bucket = one(run, T.bucket, "hub-export-bucket");
    const logBucket = one(run, T.bucket, "hub-export-bucket-access-logs");
    const logName = accessLogBucketName(config.bucket.name);
    expect(inputs(logBucket)).toMatchObject({ bucket: logName, forceDestroy: true });
    const prefix = `${config.bucket.name}/`;
    expect(inputs(one(run, T.logging))).toMatchObject({
      bucket: outputs(bucket).bucket,
      targetBucket: logName,
      targetPrefix: prefix,
    });
    // S3 delivers server access logs only to an SSE-S3 (or unencrypted) bucket: not the stack's KMS key.
    expect(inputs(one(run, T.encryption, "hub-export-bucket-access-logs")).rules).toEqual([
      { applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" } },
    ]);
    expect(inputs(one(run, T.ownership, "hub-export-bucket-access-logs")).rule).toEqual({
      objectOwnership: "BucketOwnerEnforced",
    });
    expect(inputs(one(run, T.access, "hub-export-bucket-access-logs"))).toMatchObject({
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    expect(inputs(one(run, T.lifecycle, "hub-export-bucket-access-logs")).rules).toEqual([
      { id: "expire-access-logs", status: "Enabled", filter: { prefix }, expiration: { days: 365 } },
    ]);
    const policy = JSON.parse(inputs(one(run, T.policy, "hub-export-bucket-access-logs")).policy) as PolicyDocument;
    expect(policy.Statement[0]).toEqual({
      Sid: "S3ServerAccessLogDelivery",
      Effect: "Allow",
      Principal: { Service: "logging.s3.amazonaws.com" },
      Action: "s3:PutObject",
      Resource: `${outputs(logBucket).arn}/${prefix}*`,
      Condition: {
        ArnLike: { "aws:SourceArn": outputs(bucket).arn },
        StringEquals: { "aws:SourceAccount": "123456789012" },
      },
    });
    expect(policy.Statement[1].Sid).toBe("DenyInsecureTransport");
  });

  it("go to the log bucket the config names, with its prefix; no log bucket is created", async () => {
    const qa = editKey<Record<string, unknown>>(fixtureStack("qa").config, "bucket", (b) => ({
      ...b,
      accessLogs: { bucket: "acme-platform-logs-qa", prefix: "s3/acme/" },
    }));
    const run = await planOf(qa, "qa");
    expect(inputs(one(run, T.logging))).toMatchObject({
      targetBucket: "acme-platform-logs-qa",
      targetPrefix: "s3/acme/",
    });
    expect(ofType(run, T.bucket).map((b) => b.name)).toEqual(["hub-export-bucket"]);
  });

  it("are the platform's for an adopted bucket (prod): no logging is set", async () => {
    const run = await planOf(fixtureStack("prod").config, "prod");
    expect(ofType(run, T.logging)).toEqual([]);
  });

  it("refuses a retention for a bucket the stack does not create, and logging settings for an adopted bucket", () => {
    const raw = (bucket: Record<string, unknown>) => {
      const qa = editKey<Record<string, unknown>>(fixtureStack("qa").config, "bucket", (b) => ({ ...b, ...bucket }));
      return () => configFromEngine(qa, "qa");
    };
    expect(raw({ accessLogs: { bucket: "acme-logs", retentionDays: 30 } })).toThrow(
      /bucket\.accessLogs\.retentionDays: is for the log bucket the stack creates/,
    );
    expect(raw({ create: false, accessLogs: { bucket: "acme-logs" } })).toThrow(
      /bucket\.accessLogs: is for a bucket the stack creates/,
    );
  });

  it("name a log bucket within S3's 63 characters, however long the bucket's name", () => {
    expect(accessLogBucketName("acme-platform-qa")).toBe("acme-platform-qa-access-logs");
    const long = accessLogBucketName("a".repeat(60));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^a+-logs-[0-9a-f]{8}$/);
  });
});
