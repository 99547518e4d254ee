/**
 * An object the platform environment's hub pipelines share (folder markers, the template of a build, the scripts
 * templates): created when its key is absent, never overwritten, never deleted (providers/sharedObjects.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import { sharedObjectProvider, SHARED_OBJECT_PROVIDER_VERSION } from "../../providers/sharedObjects";
import { scriptFolderLocation, type ScriptFolderArgs } from "./credentialFiles";

/** `kmsKeyArn` is used when this stack creates the object. */
export interface SharedObjectArgs extends Omit<ScriptFolderArgs, "prefix"> {
  key: string;
  content: pulumi.Input<string>;
  contentType: string;
}

export class SharedObject extends DynamicResource {
  /** Whether this stack created the object (false: it was there already and is left as it is). */
  declare readonly created: pulumi.Output<boolean>;

  constructor(name: string, args: SharedObjectArgs, opts?: pulumi.CustomResourceOptions) {
    const location = scriptFolderLocation({ ...args, prefix: "" });
    super(
      sharedObjectProvider,
      name,
      {
        location,
        key: args.key,
        content: args.content,
        contentType: args.contentType,
        version: SHARED_OBJECT_PROVIDER_VERSION,
        created: undefined,
      },
      opts,
      "hubExport",
      "SharedObject",
    );
  }
}
