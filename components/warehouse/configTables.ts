/**
 * The config-table rows (procedure steps 5.2 and 5.3): HUB_API_CONFIG per hub API and hub tenant, HUB_PLAT_CONFIG per
 * platform tenant, each its own resource `<component>/<rowName>` (core/rows.ts) so onboarding a tenant adds exactly its
 * rows; the alias keeps rows once named by rowName alone. HUB_PLAT_CONFIG rows are keyed by (plat_client_name,
 * plat_region): re-pointing a platform tenant updates its row in place.
 */
import * as pulumi from "@pulumi/pulumi";
import { rowName, type ConfigRow as ConfigRowData } from "../../core/rows";
import { ConfigRow } from "./configRow";
import { childOptions } from "../options";

export interface ConfigTablesArgs {
  /** The database's label: the rows' state holds it, never the login. */
  target: string;
  /** The staging schema, name only. */
  schema: string;
  rows: ConfigRowData[];
}

export class ConfigTables extends pulumi.ComponentResource {
  readonly rows: ConfigRow[];

  constructor(name: string, args: ConfigTablesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:warehouse:ConfigTables", name, {}, opts);
    this.rows = args.rows.map(
      (row) =>
        new ConfigRow(
          `${name}/${rowName(row)}`,
          { target: args.target, schema: args.schema, table: row.table, key: row.key, values: row.values },
          { ...childOptions(this, opts), aliases: [{ name: rowName(row) }] },
        ),
    );
    this.registerOutputs({ rowCount: this.rows.length });
  }
}
