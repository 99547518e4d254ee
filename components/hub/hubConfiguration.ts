/**
 * This job's hub-configuration folder of the platform bucket, `hub-configuration/<JOB_NAME>/`: what the hub team loads
 * or works through, since that half of the procedure has no API. The CLS load sheets (CSV and XLSX, built from the HR
 * system's exports) and the hub checklist (Markdown and JSON). The export task reads its job's CSV sheet for its
 * unknown-code check. Every key names the job: clients sharing a bucket never guard against or overwrite each other.
 */
import * as pulumi from "@pulumi/pulumi";
import { isText, type HubConfigurationFile } from "../../core/hubConfiguration";
import { writeObjects, type ObjectPlacement } from "../storage/platformBucket";

export interface HubConfigurationArgs {
  /** How the stack writes into the platform bucket (SSE-KMS with its key, guarded and retained when adopted). */
  placement: ObjectPlacement;
  files: HubConfigurationFile[];
}

export class HubConfiguration extends pulumi.ComponentResource {
  readonly keys: string[];

  constructor(name: string, args: HubConfigurationArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:hub:HubConfiguration", name, {}, opts);
    const files = args.files.map((file) => ({
      key: file.key,
      contentType: file.contentType,
      ...(isText(file) ? { content: file.body.toString("utf8") } : { contentBase64: file.body.toString("base64") }),
    }));
    writeObjects(this, name, args.placement, files);
    this.keys = args.files.map((f) => f.key);
    this.registerOutputs({ keys: this.keys });
  }
}
