/**
 * The stack's KMS key: it encrypts the bucket's default encryption, the credential files (SSE-KMS) and the connection
 * records in Secrets Manager. Created with rotation, or taken from `hubExport:bucket.kmsKeyArn`.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface EncryptionKeyArgs {
  /** Use this key instead of creating one. */
  existingKeyArn?: string;
  /** `alias/<aliasName>` for a created key. */
  aliasName: string;
  description: string;
}

export class EncryptionKey extends pulumi.ComponentResource {
  readonly keyArn: pulumi.Output<string>;

  constructor(name: string, args: EncryptionKeyArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:security:EncryptionKey", name, {}, opts);
    if (args.existingKeyArn) {
      this.keyArn = pulumi.output(args.existingKeyArn);
    } else {
      // The default key policy delegates to IAM: the roles below get exactly kms:Decrypt on this key.
      const key = new aws.kms.Key(name, { description: args.description, enableKeyRotation: true, deletionWindowInDays: 30 }, { parent: this });
      new aws.kms.Alias(name, { name: `alias/${args.aliasName}`, targetKeyId: key.keyId }, { parent: this });
      this.keyArn = key.arn;
    }
    this.registerOutputs({ keyArn: this.keyArn });
  }
}
