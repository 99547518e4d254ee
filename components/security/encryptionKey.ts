/**
 * The stack's KMS key for the bucket, its objects, the connection records and the task's log group: created with
 * rotation (protected in prod) or taken from `hubExport:bucket.kmsKeyArn`. A given alias is resolved to its key's ARN
 * first: IAM policy statements take only key ARNs (AWS KMS developer guide), and S3 reports an object's key by its
 * ARN, so an alias in an object's kmsKeyId would show as a change in every `up`.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { AwsContext } from "../awsContext";
import { keyPolicy } from "../policies";

export interface EncryptionKeyArgs {
  /** Use this key instead of creating one. */
  existingKeyArn?: string;
  /** `alias/<aliasName>` for a created key. */
  aliasName: string;
  description: string;
  /** The task's log group, which CloudWatch Logs encrypts with this key. */
  logGroupName: string;
  protect: boolean;
  aws: AwsContext;
}

/** `arn:<partition>:kms:<region>:<account>:alias/<name>`: names an alias, not a key. */
export function isAliasArn(arn: string): boolean {
  return /^arn:[^:]+:kms:[^:]*:[^:]*:alias\//.test(arn);
}

export class EncryptionKey extends pulumi.ComponentResource {
  readonly keyArn: pulumi.Output<string>;

  constructor(name: string, args: EncryptionKeyArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:security:EncryptionKey", name, {}, opts);
    if (args.existingKeyArn) {
      this.keyArn = isAliasArn(args.existingKeyArn)
        ? aws.kms.getKeyOutput({ keyId: args.existingKeyArn }, { parent: this }).arn
        : pulumi.output(args.existingKeyArn);
    } else {
      // IAM policies decide for the account's principals (the roles get exactly kms:Decrypt on this key); CloudWatch
      // Logs may use it only for the task's log group.
      const policy = pulumi.output(args.aws).apply((scope) => JSON.stringify(keyPolicy(scope, args.logGroupName)));
      const key = new aws.kms.Key(
        name,
        { description: args.description, enableKeyRotation: true, deletionWindowInDays: 30, policy },
        { parent: this, protect: args.protect },
      );
      new aws.kms.Alias(name, { name: `alias/${args.aliasName}`, targetKeyId: key.keyId }, { parent: this });
      this.keyArn = key.arn;
    }
    this.registerOutputs({ keyArn: this.keyArn });
  }
}
