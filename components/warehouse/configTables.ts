/**
 * The config-table rows (procedure steps 5.2 and 5.3): one record per hub API per hub tenant in HUB_API_CONFIG, one
 * record per platform tenant in HUB_PLAT_CONFIG. Each row is its own resource, named `<component>/<rowName>` (core/rows.ts),
 * so that onboarding a tenant adds exactly that tenant's rows and two components in one stack never share a name. The
 * alias keeps the rows of stacks deployed when they were named by rowName alone.
 *
 * HUB_PLAT_CONFIG rows are keyed and named by (plat_client_name, plat_region): re-pointing a platform tenant at another
 * hub tenant updates its row in place; removing it deletes its row and no other client's.
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
