/** One row of a config table as a resource (providers/sqlRows.ts): upsert, update in place, replace on a new key. */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import { configRowProvider, CONFIG_ROW_PROVIDER_VERSION, type SqlValue } from "../../providers/sqlRows";

export interface ConfigRowArgs {
  /** The database's label (providers/pg.ts databaseLabel); the login comes from the stack config when the row runs. */
  target: string;
  /** The staging schema, name only. */
  schema: string;
  table: string;
  key: Record<string, string>;
  values: Record<string, SqlValue>;
}

export class ConfigRow extends DynamicResource {
  declare readonly schema: pulumi.Output<string>;
  declare readonly table: pulumi.Output<string>;
  declare readonly key: pulumi.Output<Record<string, string>>;
  declare readonly values: pulumi.Output<Record<string, SqlValue>>;

  constructor(name: string, args: ConfigRowArgs, opts?: pulumi.CustomResourceOptions) {
    super(configRowProvider, name, { ...args, version: CONFIG_ROW_PROVIDER_VERSION }, opts, "hubExport", "ConfigRow");
  }
}
