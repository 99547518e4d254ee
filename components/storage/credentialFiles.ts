/**
 * The scripts folder's configuration files (procedure steps 7.2 to 7.4), shared by every hub pipeline of the platform
 * environment: this stack's database connection name in credentials.ini and its hub tenants' entries in
 * tenant_credentials.txt, merged in with conditional writes (providers/scriptFiles.ts), both files created from their
 * templates when absent, encrypted with SSE-KMS under the stack's key. Removing the stack removes only its entries.
 */
import * as pulumi from "@pulumi/pulumi";
import { scriptFilesProvider, SCRIPT_FILES_PROVIDER_VERSION } from "../../providers/scriptFiles";
import { childOptions } from "../options";

export interface CredentialFilesArgs {
  bucketName: pulumi.Input<string>;
  /** The scripts folder, e.g. Tools/hub_python_scripts/. */
  prefix: string;
  region: pulumi.Input<string>;
  kmsKeyArn: pulumi.Input<string>;
  warehouseConnection: string;
  /** Hub tenant id → credentials string: a Pulumi secret. */
  tenantCredentials: pulumi.Output<Record<string, string>>;
}

/** The dynamic resource: this stack's entries in the shared files. */
export class ScriptFileEntries extends pulumi.dynamic.Resource {
  constructor(name: string, args: CredentialFilesArgs, opts?: pulumi.CustomResourceOptions) {
    const location = pulumi.all([args.bucketName, args.region, args.kmsKeyArn]).apply(([bucket, region, kmsKeyArn]) => ({ kind: "s3" as const, bucket, prefix: args.prefix, region, kmsKeyArn }));
    const inputs = { location, warehouseConnection: args.warehouseConnection, entries: args.tenantCredentials, version: SCRIPT_FILES_PROVIDER_VERSION };
    super(scriptFilesProvider, name, inputs, { ...opts, additionalSecretOutputs: ["entries"] }, "hubExport", "ScriptFileEntries");
  }
}

export class CredentialFiles extends pulumi.ComponentResource {
  readonly entries: ScriptFileEntries;

  constructor(name: string, args: CredentialFilesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:CredentialFiles", name, {}, opts);
    this.entries = new ScriptFileEntries(`${name}/${args.prefix}`, args, childOptions(this, opts));
    this.registerOutputs({});
  }
}
