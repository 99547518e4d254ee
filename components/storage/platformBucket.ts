/**
 * The platform bucket (procedure steps 1 and 7), created (versioning, public access block, SSE-KMS, TLS-only) or
 * adopted by name, and the objects in it: shared ones as SharedObject (written only where absent), the stack's own as
 * BucketObjectv2, each encrypted with the stack's key. Retention and protection: docs/pulumi-reference.md, "Data
 * outlives mistakes".
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ACCESS_LOG_RETENTION_DAYS, type StackConfig } from "../../config/schema";
import { accessLogBucketPolicy, denyInsecureTransportPolicy } from "../policies";
import { accessLogBucketName } from "../naming";
import { guardedBucketName, OWNER_TAG, ownerTagValue, s3ObjectInspector, type ObjectInspector } from "./objectGuard";
import { SharedObject } from "./sharedObject";

export interface BucketFile {
  key: string;
  /** Text content; `contentBase64` for binary files instead. */
  content?: pulumi.Input<string>;
  contentBase64?: string;
  contentType: string;
  /** Shared with the platform environment's other pipelines: created only when absent, never overwritten or deleted. */
  shared?: boolean;
}

/** What the stack may do to its data: prod protects, qa may be destroyed without leftovers. */
export interface RetentionOptions {
  /** prod: the created bucket (and key, baseline) are protected against deletion. */
  protect: boolean;
  /** qa: `pulumi destroy` empties a created bucket (every version) and the image repository. */
  destroyable: boolean;
}

export interface PlatformBucketArgs {
  bucketName: string;
  /** true: create the bucket; false: adopt the existing bucket of that name and leave its settings alone. */
  create: boolean;
  /** The stack's key: the created bucket's default encryption, and every object's. */
  kmsKeyArn: pulumi.Input<string>;
  /** The bucket's region, for the shared objects and the guard (both use the AWS SDK). */
  region: pulumi.Input<string>;
  /** How the guard of an adopted bucket looks at objects (default: HeadObject and GetObjectTagging; offline: mocks). */
  objectInspector?: ObjectInspector;
  /** Folder markers, the rendered template, the scripts templates. */
  files: BucketFile[];
  retention: RetentionOptions;
  /** Where a created bucket's server access logs go: to `bucket`, or to a log bucket the stack creates. */
  accessLogs: StackConfig["bucket"]["accessLogs"];
  /** The account, for the log bucket's policy (only S3 logging on behalf of this account's bucket may write). */
  accountId: pulumi.Input<string>;
}

/** Options and inputs shared by every object the stack writes into the bucket. */
export interface ObjectPlacement {
  /** The bucket name; in an adopted bucket it resolves only after the guard passed. */
  bucket: (keys: string[]) => pulumi.Output<string>;
  kmsKeyArn: pulumi.Input<string>;
  region: pulumi.Input<string>;
  tags: Record<string, string>;
  /** Retained on delete in an adopted bucket. */
  retainOnDelete: boolean;
  dependsOn: pulumi.Resource[];
}

export class PlatformBucket extends pulumi.ComponentResource {
  readonly bucketName: pulumi.Output<string>;
  readonly bucketArn: pulumi.Output<string>;
  /** How the stack's objects are written into this bucket (also by CredentialFiles). */
  readonly placement: ObjectPlacement;
  readonly fileKeys: string[];

  constructor(name: string, args: PlatformBucketArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:PlatformBucket", name, {}, opts);
    let ready: pulumi.Resource[];
    if (args.create) {
      const bucket = new aws.s3.Bucket(
        name,
        { bucket: args.bucketName, forceDestroy: args.retention.destroyable },
        { parent: this, protect: args.retention.protect },
      );
      const dependsOn = { parent: this, dependsOn: [bucket] };
      const access = blockPublicAccess(name, bucket, dependsOn);
      new aws.s3.BucketVersioning(
        name,
        { bucket: bucket.id, versioningConfiguration: { status: "Enabled" } },
        dependsOn,
      );
      const encryption = new aws.s3.BucketServerSideEncryptionConfiguration(
        name,
        {
          bucket: bucket.id,
          rules: [
            {
              applyServerSideEncryptionByDefault: { sseAlgorithm: "aws:kms", kmsMasterKeyId: args.kmsKeyArn },
              bucketKeyEnabled: true,
            },
          ],
        },
        dependsOn,
      );
      new aws.s3.BucketPolicy(
        name,
        { bucket: bucket.id, policy: bucket.arn.apply((arn) => JSON.stringify(denyInsecureTransportPolicy(arn))) },
        { parent: this, dependsOn: [access] },
      );
      this.accessLogs(name, args, bucket);
      this.bucketName = bucket.bucket;
      this.bucketArn = bucket.arn;
      ready = [bucket, access, encryption];
    } else {
      // A read: preview fails early when the bucket does not exist; destroy never deletes it.
      const bucket = aws.s3.Bucket.get(name, args.bucketName, undefined, { parent: this });
      this.bucketName = bucket.bucket;
      this.bucketArn = bucket.arn;
      ready = [bucket];
    }

    const adopted = !args.create;
    // One inspector for every write: the stack's credentials are resolved (and their account checked) once.
    const inspector = args.objectInspector ?? s3ObjectInspector();
    this.placement = {
      bucket: (keys) => (adopted ? guardedBucketName(this.bucketName, args.region, keys, inspector) : this.bucketName),
      kmsKeyArn: args.kmsKeyArn,
      region: args.region,
      tags: { [OWNER_TAG]: ownerTagValue() },
      retainOnDelete: adopted,
      dependsOn: ready,
    };
    writeObjects(this, name, this.placement, args.files);
    this.fileKeys = args.files.map((f) => f.key);
    this.registerOutputs({ bucketName: this.bucketName, bucketArn: this.bucketArn, fileKeys: this.fileKeys });
  }

  /**
   * Server access logs of the created bucket: to the given log bucket, or to one the stack creates for them. S3 writes
   * server access logs only into a bucket of the same account and region, whose default encryption, if any, is SSE-S3
   * (SSE-KMS is not supported for log delivery) and which grants S3's logging service s3:PutObject by bucket policy
   * (S3 User Guide, "Enabling Amazon S3 server access logging"): so the log bucket is SSE-S3, owner-enforced, private.
   */
  private accessLogs(name: string, args: PlatformBucketArgs, bucket: aws.s3.Bucket): void {
    const logs = args.accessLogs;
    const prefix = logs.prefix ?? `${args.bucketName}/`;
    let target: pulumi.Input<string> = logs.bucket ?? "";
    const dependsOn: pulumi.Resource[] = [];
    if (!logs.bucket) {
      const logName = `${name}-access-logs`;
      const logBucket = new aws.s3.Bucket(
        logName,
        { bucket: accessLogBucketName(args.bucketName), forceDestroy: args.retention.destroyable },
        { parent: this, protect: args.retention.protect },
      );
      const opts = { parent: this, dependsOn: [logBucket] };
      const access = blockPublicAccess(logName, logBucket, opts);
      const ownership = new aws.s3.BucketOwnershipControls(
        logName,
        { bucket: logBucket.id, rule: { objectOwnership: "BucketOwnerEnforced" } },
        opts,
      );
      const encryption = new aws.s3.BucketServerSideEncryptionConfiguration(
        logName,
        { bucket: logBucket.id, rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" } }] },
        opts,
      );
      new aws.s3.BucketLifecycleConfiguration(
        logName,
        {
          bucket: logBucket.id,
          rules: [
            {
              id: "expire-access-logs",
              status: "Enabled",
              filter: { prefix },
              expiration: { days: logs.retentionDays ?? ACCESS_LOG_RETENTION_DAYS },
            },
          ],
        },
        opts,
      );
      const policy = new aws.s3.BucketPolicy(
        logName,
        {
          bucket: logBucket.id,
          policy: pulumi
            .all([logBucket.arn, bucket.arn, args.accountId])
            .apply(([logBucketArn, sourceBucketArn, accountId]) =>
              JSON.stringify(accessLogBucketPolicy({ logBucketArn, prefix, sourceBucketArn, accountId })),
            ),
        },
        { parent: this, dependsOn: [access] },
      );
      target = logBucket.bucket;
      dependsOn.push(ownership, encryption, policy);
    }
    new aws.s3.BucketLogging(
      name,
      { bucket: bucket.id, targetBucket: target, targetPrefix: prefix },
      { parent: this, dependsOn: [bucket, ...dependsOn] },
    );
  }
}

function blockPublicAccess(name: string, bucket: aws.s3.Bucket, opts: pulumi.CustomResourceOptions) {
  const blocked = {
    blockPublicAcls: true,
    blockPublicPolicy: true,
    ignorePublicAcls: true,
    restrictPublicBuckets: true,
  };
  return new aws.s3.BucketPublicAccessBlock(name, { bucket: bucket.id, ...blocked }, opts);
}

/**
 * One BucketObjectv2 per file of the stack's own: SSE-KMS with the stack's key, tagged as the stack's, guarded in an
 * adopted bucket. A shared file is a SharedObject: written only where its key is absent, never overwritten or deleted.
 */
export function writeObjects(
  parent: pulumi.Resource,
  name: string,
  placement: ObjectPlacement,
  files: BucketFile[],
): void {
  if (files.length === 0) return;
  // Shared objects need no guard: they never replace what is there. The guard covers the keys that are this stack's alone.
  const own = files.filter((f) => !f.shared);
  const bucket = own.length ? placement.bucket(own.map((f) => f.key)) : undefined;
  const { dependsOn } = placement;
  for (const file of files) {
    if (file.shared) {
      if (file.contentBase64 !== undefined) throw new Error(`${file.key}: a shared object is text`);
      new SharedObject(
        `${name}/${file.key}`,
        {
          bucketName: placement.bucket([]),
          region: placement.region,
          kmsKeyArn: placement.kmsKeyArn,
          key: file.key,
          content: file.content ?? "",
          contentType: file.contentType,
        },
        { parent, dependsOn },
      );
      continue;
    }
    new aws.s3.BucketObjectv2(
      `${name}/${file.key}`,
      {
        bucket: bucket!,
        key: file.key,
        ...(file.contentBase64 !== undefined ? { contentBase64: file.contentBase64 } : { content: file.content ?? "" }),
        contentType: file.contentType,
        serverSideEncryption: "aws:kms",
        kmsKeyId: placement.kmsKeyArn,
        tags: placement.tags,
      },
      { parent, dependsOn, ...(placement.retainOnDelete ? { retainOnDelete: true } : {}) },
    );
  }
}
