/**
 * The scripts folder's configuration files (procedure steps 7.2 to 7.4), shared by every hub pipeline of the platform
 * environment: this stack's database connection name in credentials.ini and its hub tenants' entries in
 * tenant_credentials.txt, merged in with conditional writes (providers/scriptFiles.ts), both files created from their
 * templates when absent, encrypted with SSE-KMS under the stack's key. Removing the stack removes only its entries.
 */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import { scriptFilesProvider, SCRIPT_FILES_PROVIDER_VERSION } from "../../providers/scriptFiles";
import { childOptions } from "../options";

/** Where the shared scripts folder is, for the dynamic resources that write into it. */
export interface ScriptFolderArgs {
  bucketName: pulumi.Input<string>;
  /** The scripts folder, e.g. Tools/hub_python_scripts/. */
  prefix: string;
  region: pulumi.Input<string>;
  kmsKeyArn: pulumi.Input<string>;
}

/** The folder's location input. Each field its own input: during a first preview the bucket or key may be unknown, the location's kind is not. */
export function scriptFolderLocation(args: ScriptFolderArgs) {
  return {
    kind: "s3" as const,
    bucket: args.bucketName,
    prefix: args.prefix,
    region: args.region,
    kmsKeyArn: args.kmsKeyArn,
  };
}

export interface CredentialFilesArgs extends ScriptFolderArgs {
  warehouseConnection: string;
  /** Hub tenant id → credentials string: a Pulumi secret. */
  tenantCredentials: pulumi.Output<Record<string, string>>;
}

/** The dynamic resource: this stack's entries in the shared files. */
export class ScriptFileEntries extends DynamicResource {
  constructor(name: string, args: CredentialFilesArgs, opts?: pulumi.CustomResourceOptions) {
    const inputs = {
      location: scriptFolderLocation(args),
      warehouseConnection: args.warehouseConnection,
      entries: args.tenantCredentials,
      version: SCRIPT_FILES_PROVIDER_VERSION,
    };
    super(
      scriptFilesProvider,
      name,
      inputs,
      { ...opts, additionalSecretOutputs: ["entries"] },
      "hubExport",
      "ScriptFileEntries",
    );
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
