/** The common-schema baseline as a resource: applied on create, applied again when its rendered SQL changes. */
import * as pulumi from "@pulumi/pulumi";
import { baselineProvider, BASELINE_PROVIDER_VERSION, sha256Hex } from "../../providers/baseline";

export interface SqlBaselineArgs {
  /** The database's label (providers/pg.ts databaseLabel); the login comes from the stack config when it runs. */
  target: string;
  /** Hub_Plat_Common_Schema_Baseline_<BuildNumber> */
  name: string;
  buildNumber: string;
  /** sha256 of the baseline file (tags still in). */
  templateSha256: string;
  /** The SQL rendered for this stack. */
  sql: string;
}

export class SqlBaseline extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly buildNumber: pulumi.Output<string>;
  declare readonly templateSha256: pulumi.Output<string>;
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: SqlBaselineArgs, opts?: pulumi.CustomResourceOptions) {
    const inputs = { ...args, sha256: sha256Hex(args.sql), version: BASELINE_PROVIDER_VERSION };
    super(baselineProvider, name, inputs, opts, "hubExport", "SqlBaseline");
  }
}
