/**
 * A vendor scripts release in the shared scripts folder (procedure step 7.1): `pulumi up` makes the folder's content
 * the release's, but for the platform's credential files (providers/scriptsRelease.ts). The state holds the manifest,
 * not the content; removing the stack leaves the folder as it is.
 */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import {
  keptScriptFiles,
  releaseManifest,
  scriptsReleaseProvider,
  SCRIPTS_RELEASE_PROVIDER_VERSION,
} from "../../providers/scriptsRelease";
import type { LoadedScriptsRelease } from "../../config/load";
import { childOptions } from "../options";
import { scriptFolderLocation, type ScriptFolderArgs } from "./credentialFiles";

export interface ScriptsReleaseArgs extends ScriptFolderArgs {
  release: LoadedScriptsRelease;
}

/** The dynamic resource: the folder's content made the release's. */
export class ScriptsReleaseFiles extends DynamicResource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: ScriptsReleaseArgs, opts?: pulumi.CustomResourceOptions) {
    const { release } = args;
    const inputs = {
      location: scriptFolderLocation(args),
      zipPath: release.zipPath,
      source: release.source,
      sha256: release.sha256,
      files: releaseManifest(release),
      keep: keptScriptFiles(release),
      version: SCRIPTS_RELEASE_PROVIDER_VERSION,
    };
    super(scriptsReleaseProvider, name, inputs, opts, "hubExport", "ScriptsReleaseFiles");
  }
}

export class ScriptsRelease extends pulumi.ComponentResource {
  readonly files: ScriptsReleaseFiles;

  constructor(name: string, args: ScriptsReleaseArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:storage:ScriptsRelease", name, {}, opts);
    // Retained: the folder is the platform environment's, another stack may use the release.
    this.files = new ScriptsReleaseFiles(`${name}/${args.prefix}`, args, {
      ...childOptions(this, opts),
      retainOnDelete: true,
    });
    this.registerOutputs({ sha256: this.files.sha256 });
  }
}
