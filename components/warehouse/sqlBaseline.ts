/**
 * The SQL of procedure step 5.1 as resources, both with the baseline provider (providers/baseline.ts): applied on
 * create, applied again when the rendered SQL changes, existing tables adopted after the column check, never dropped.
 *  - SqlBaseline: the common schema, the same SQL for every client of the environment;
 *  - ClientRunTables: one client's run tables, a type of its own so that preview names them apart.
 */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import { baselineProvider, BASELINE_PROVIDER_VERSION } from "../../providers/baseline";
import { sha256Hex } from "../../providers/json";
import type { SqlTables } from "../../core/sqlTables";

/** A rendered SQL file of the baseline. */
export interface SqlFile {
  /** The file's name: Hub_Plat_Common_Schema_Baseline_<BuildNumber>, Hub_Client_Run_Tables_<BuildNumber> */
  name: string;
  buildNumber: string;
  /** sha256 of the file (tags still in). */
  templateSha256: string;
  /** The SQL rendered for this stack. */
  sql: string;
  /** Its tables' columns (core/sqlTables.ts): what an adopted table must have. */
  tables: SqlTables;
  /** Columns the project writes when an adopted table has them, by `schema.table` (providers/baseline.ts). */
  writtenWhenPresent?: Record<string, string[]>;
}

export interface SqlBaselineArgs extends SqlFile {
  /** The database's label (providers/pg.ts databaseLabel); the login comes from the stack config when it runs. */
  target: string;
}

const inputsOf = (args: SqlBaselineArgs) => ({
  ...args,
  sha256: sha256Hex(args.sql),
  version: BASELINE_PROVIDER_VERSION,
});

export class SqlBaseline extends DynamicResource {
  declare readonly name: pulumi.Output<string>;
  declare readonly buildNumber: pulumi.Output<string>;
  declare readonly templateSha256: pulumi.Output<string>;
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: SqlBaselineArgs, opts?: pulumi.CustomResourceOptions) {
    super(baselineProvider, name, inputsOf(args), opts, "hubExport", "SqlBaseline");
  }
}

export class ClientRunTables extends DynamicResource {
  declare readonly name: pulumi.Output<string>;
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: SqlBaselineArgs, opts?: pulumi.CustomResourceOptions) {
    super(baselineProvider, name, inputsOf(args), opts, "hubExport", "ClientRunTables");
  }
}
