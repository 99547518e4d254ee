/**
 * The scripts folder's configuration files (procedure steps 7.2 to 7.4): credentials.ini (the database connection
 * name) and tenant_credentials.txt (each hub tenant's credentials string, secret). Written like every object of the
 * stack (components/storage/platformBucket.ts writeObjects): SSE-KMS under the stack's key, guarded and retained in
 * an adopted bucket.
 */
import * as pulumi from "@pulumi/pulumi";
import { writeObjects, type BucketFile, type ObjectPlacement } from "./platformBucket";
import { childOptions } from "../options";

export interface CredentialFilesArgs {
  placement: ObjectPlacement;
  /** Content that holds secrets must be a Pulumi secret (see components/secrets.ts). */
  files: BucketFile[];
}

export class CredentialFiles extends pulumi.ComponentResource {
  readonly fileKeys: string[];

  constructor(name: string, args: CredentialFilesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:CredentialFiles", name, {}, opts);
    writeObjects(this, name, args.placement, args.files, childOptions(this, opts));
    this.fileKeys = args.files.map((f) => f.key);
    this.registerOutputs({ fileKeys: this.fileKeys });
  }
}
