/**
 * The scripts folder's configuration files (procedure steps 7.2 to 7.4): credentials.ini (the database connection
 * name) and tenant_credentials.txt (each hub tenant's credentials string, secret). Both are encrypted with SSE-KMS
 * under the stack's key, whatever the bucket's default.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { BucketFile } from "./platformBucket";
import { childOptions } from "../options";

export interface CredentialFilesArgs {
  bucketName: pulumi.Input<string>;
  kmsKeyArn: pulumi.Input<string>;
  /** Content that holds secrets must be a Pulumi secret (see components/secrets.ts). */
  files: BucketFile[];
}

export class CredentialFiles extends pulumi.ComponentResource {
  readonly fileKeys: string[];

  constructor(name: string, args: CredentialFilesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:CredentialFiles", name, {}, opts);
    for (const file of args.files) {
      new aws.s3.BucketObjectv2(
        `${name}/${file.key}`,
        { bucket: args.bucketName, key: file.key, content: file.content, contentType: file.contentType, serverSideEncryption: "aws:kms", kmsKeyId: args.kmsKeyArn },
        childOptions(this, opts),
      );
    }
    this.fileKeys = args.files.map((f) => f.key);
    this.registerOutputs({ fileKeys: this.fileKeys });
  }
}
