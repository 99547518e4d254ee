/**
 * The platform bucket (procedure steps 1 and 7): created with versioning, a public access block, default SSE-KMS
 * encryption and a TLS-only policy, or adopted by name (read, never created or deleted). It holds the folder markers
 * /templates/hub_hrsys_export and /Tools/hub_python_scripts, the rendered pipeline template and the scripts-folder
 * templates, and this job's rendered pipeline under pipelines/hub_hrsys_export/. Objects every hub pipeline of the
 * platform environment shares (folder markers, the template, the scripts templates) are retained when the stack is
 * removed. The credential files are components/storage/credentialFiles.ts.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { denyInsecureTransportPolicy } from "../policies";

export interface BucketFile {
  key: string;
  content: pulumi.Input<string>;
  contentType: string;
  /** Shared with the platform environment's other pipelines: left in the bucket when this stack removes it. */
  shared?: boolean;
}

export interface PlatformBucketArgs {
  bucketName: string;
  /** true: create the bucket; false: adopt the existing bucket of that name and leave its settings alone. */
  create: boolean;
  /** Default encryption of a created bucket. */
  kmsKeyArn: pulumi.Input<string>;
  /** Folder markers, the rendered template, the scripts templates: stored with the bucket's default encryption. */
  files: BucketFile[];
}

export class PlatformBucket extends pulumi.ComponentResource {
  readonly bucketName: pulumi.Output<string>;
  readonly bucketArn: pulumi.Output<string>;
  /** The resources objects must wait for: the bucket and, when created, its encryption settings. */
  readonly ready: pulumi.Resource[];
  readonly fileKeys: string[];

  constructor(name: string, args: PlatformBucketArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:PlatformBucket", name, {}, opts);
    const parent = { parent: this };
    if (args.create) {
      const bucket = new aws.s3.Bucket(name, { bucket: args.bucketName, forceDestroy: false }, parent);
      const dependsOn = { parent: this, dependsOn: [bucket] };
      const access = new aws.s3.BucketPublicAccessBlock(
        name,
        { bucket: bucket.id, blockPublicAcls: true, blockPublicPolicy: true, ignorePublicAcls: true, restrictPublicBuckets: true },
        dependsOn,
      );
      new aws.s3.BucketVersioning(name, { bucket: bucket.id, versioningConfiguration: { status: "Enabled" } }, dependsOn);
      const encryption = new aws.s3.BucketServerSideEncryptionConfiguration(
        name,
        { bucket: bucket.id, rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "aws:kms", kmsMasterKeyId: args.kmsKeyArn }, bucketKeyEnabled: true }] },
        dependsOn,
      );
      new aws.s3.BucketPolicy(name, { bucket: bucket.id, policy: bucket.arn.apply((arn) => JSON.stringify(denyInsecureTransportPolicy(arn))) }, { parent: this, dependsOn: [access] });
      this.bucketName = bucket.bucket;
      this.bucketArn = bucket.arn;
      this.ready = [bucket, access, encryption];
    } else {
      // A read: preview fails early when the bucket does not exist; destroy never deletes it.
      const bucket = aws.s3.Bucket.get(name, args.bucketName, undefined, parent);
      this.bucketName = bucket.bucket;
      this.bucketArn = bucket.arn;
      this.ready = [bucket];
    }

    for (const file of args.files) {
      new aws.s3.BucketObjectv2(
        `${name}/${file.key}`,
        { bucket: this.bucketName, key: file.key, content: file.content, contentType: file.contentType },
        { parent: this, dependsOn: this.ready, retainOnDelete: file.shared === true },
      );
    }
    this.fileKeys = args.files.map((f) => f.key);
    this.registerOutputs({ bucketName: this.bucketName, bucketArn: this.bucketArn, fileKeys: this.fileKeys });
  }
}
