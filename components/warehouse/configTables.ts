/**
 * The config-table rows (procedure steps 5.2 and 5.3): one record per hub API per tenant in HUB_API_CONFIG, one
 * record per tenant in HUB_PLAT_CONFIG. Each row is its own resource, named by core/rows.ts rowName, so that
 * onboarding a tenant adds exactly that tenant's rows.
 *
 * HUB_PLAT_CONFIG rows are named by platform region (unique per client), their key being (plat_client_name,
 * hub_tenant_id):
 * - a new hubTenantId for a region changes the key of the same resource: replaced, the old row deleted first;
 * - a new platRegion for a tenant renames the resource: the new one upserts the row (same key) first, then the old
 *   one is deleted, which leaves the row alone since its plat_region is no longer the old one (`identityColumns`).
 */
import * as pulumi from "@pulumi/pulumi";
import { rowName, type ConfigRow as ConfigRowData } from "../../core/rows";
import { TABLES } from "../../core/naming";
import { ConfigRow } from "./configRow";
import { childOptions } from "../options";

/** Columns of `values` in a table's row names (rowName): see providers/sqlRows.ts identityColumns. */
const IDENTITY_COLUMNS: Record<string, string[]> = { [TABLES.platConfig]: ["plat_region"] };

function rowOptions(parent: pulumi.ComponentResource, row: ConfigRowData, opts?: pulumi.ComponentResourceOptions): pulumi.CustomResourceOptions {
  const options = childOptions(parent, opts);
  // Named HUB_PLAT_CONFIG/<hub_tenant_id> before: an existing stack keeps its rows (updated in place, not deleted).
  if (row.table === TABLES.platConfig) options.aliases = [{ name: `${row.table}/${row.key.hub_tenant_id}` }];
  return options;
}

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
    this.rows = args.rows.map((row) => {
      const identityColumns = IDENTITY_COLUMNS[row.table];
      return new ConfigRow(
        rowName(row),
        { target: args.target, schema: args.schema, table: row.table, key: row.key, values: row.values, ...(identityColumns ? { identityColumns } : {}) },
        rowOptions(this, row, opts),
      );
    });
    this.registerOutputs({ rowCount: this.rows.length });
  }
}
