/**
 * The hub-configuration folder of the platform bucket: what the hub team loads or works through, since that half of
 * the procedure has no API. The CLS load sheets (CSV and XLSX, built from the HR system's exports) and the hub
 * checklist (Markdown and JSON). The export task reads the CSV sheet for its unknown-code check.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { BUCKET_FOLDERS } from "../../core/naming";
import { isText, type HubConfigurationFile } from "../../core/hubConfiguration";

export interface HubConfigurationArgs {
  bucketName: pulumi.Input<string>;
  files: HubConfigurationFile[];
}

export class HubConfiguration extends pulumi.ComponentResource {
  readonly keys: string[];

  constructor(name: string, args: HubConfigurationArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:hub:HubConfiguration", name, {}, opts);
    const parent = { parent: this };
    new aws.s3.BucketObjectv2(`${name}/${BUCKET_FOLDERS.hubConfiguration}`, { bucket: args.bucketName, key: BUCKET_FOLDERS.hubConfiguration, content: "", contentType: "application/x-directory" }, parent);
    for (const file of args.files) {
      const body = isText(file) ? { content: file.body.toString("utf8") } : { contentBase64: file.body.toString("base64") };
      new aws.s3.BucketObjectv2(`${name}/${file.key}`, { bucket: args.bucketName, key: file.key, contentType: file.contentType, ...body }, parent);
    }
    this.keys = [BUCKET_FOLDERS.hubConfiguration, ...args.files.map((f) => f.key)];
    this.registerOutputs({ keys: this.keys });
  }
}
