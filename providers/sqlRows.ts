/**
 * Rows of HUB_API_CONFIG and HUB_PLAT_CONFIG (procedure steps 5.2, 5.3): upsertRow, readRow, deleteRow, used by local
 * mode too, and the dynamic provider behind components/warehouse/configRow.ts. Serialized provider code:
 * providers/README.md.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import * as pg from "./pg";
import * as json from "./json";
import * as refusals from "./refusal";

const { withPgClient, inPgTransaction, quoteIdent, configureLogin, currentLogin } = pg;
const { pick, stableJson } = json;
const { refusal } = refusals;

/** Bump when create/update/delete behave differently, so that `pulumi up` re-applies every row. */
export const CONFIG_ROW_PROVIDER_VERSION = 2;

export type SqlValue = string | null;

/** A row addressed by its key columns; `values` are the other managed columns. */
export interface ConfigRowSpec {
  schema: string;
  table: string;
  key: Record<string, string>;
  values: Record<string, SqlValue>;
}

/** The dynamic resource's inputs and outputs. */
export interface ConfigRowState extends ConfigRowSpec {
  /** The database, `host:port/database` (providers/pg.ts databaseLabel): a label, never a login. */
  target: string;
  version: number;
}

/** `staging.hub_api_config/hub_api_name=ERS,hub_tenant_id=...`: schema, table and key, stable under key order. */
export function configRowId(row: Pick<ConfigRowSpec, "schema" | "table" | "key">): string {
  const key = Object.keys(row.key)
    .sort()
    .map((column) => `${column.toLowerCase()}=${encodeURIComponent(row.key[column])}`)
    .join(",");
  return `${row.schema.toLowerCase()}.${row.table.toLowerCase()}/${key}`;
}

/**
 * Inserts the row, or updates the one row its key finds. The config tables are shared and may have no key constraint
 * (the specification shows none), so no ON CONFLICT: in one transaction, under an advisory lock on the row's key
 * (two `up`s of one key wait for each other), the key's rows are counted first. More than one is refused, naming the
 * key: this project relies on one row per key of its own rows, and checks it itself. Values parameterized, identifiers
 * quoted.
 */
export async function upsertRow(target: pg.PgTarget, row: ConfigRowSpec): Promise<void> {
  const table = `${quoteIdent(row.schema, "schema")}.${quoteIdent(row.table, "table")}`;
  const keyColumns = Object.keys(row.key);
  const valueColumns = Object.keys(row.values);
  if (keyColumns.length === 0) throw new Error(`${table}: a row needs at least one key column`);
  const id = configRowId(row);
  const keyParams = keyColumns.map((c) => row.key[c]);
  const where = keyColumns.map((c, i) => `${quoteIdent(c, "column")} = $${i + 1}`).join(" AND ");
  await withPgClient(target, async (client) => {
    try {
      await inPgTransaction(client, async () => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`hub-export config row ${id}`]);
        const found = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${table} WHERE ${where}`,
          keyParams,
        );
        const n = found.rows[0].n;
        if (n > 1) {
          throw refusal(
            `the key matches ${n} rows; this project keeps one row per key: delete all but one by hand (nothing was changed)`,
          );
        }
        if (n === 1) {
          if (valueColumns.length === 0) return;
          const set = valueColumns
            .map((c, i) => `${quoteIdent(c, "column")} = $${keyColumns.length + i + 1}`)
            .join(", ");
          await client.query(`UPDATE ${table} SET ${set} WHERE ${where}`, [
            ...keyParams,
            ...valueColumns.map((c) => row.values[c]),
          ]);
          return;
        }
        const columns = [...keyColumns, ...valueColumns].map((c) => quoteIdent(c, "column"));
        const params = [...keyParams, ...valueColumns.map((c) => row.values[c])];
        await client.query(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${params.map((_, i) => `$${i + 1}`).join(", ")})`,
          params,
        );
      });
    } catch (err) {
      const message = `upsert into ${row.schema}.${row.table} (${id}) failed: ${(err as Error).message}`;
      // A refusal, or the database's answer as the cause (a shared table with other columns or types: core/refusals.ts).
      throw (err as Error).name === "UserError" ? refusal(message) : new Error(message, { cause: err });
    }
  });
}

/** The row's managed columns as they are in the database, or undefined when the row is gone. */
export async function readRow(
  target: pg.PgTarget,
  row: Pick<ConfigRowSpec, "schema" | "table" | "key"> & { columns: string[] },
): Promise<Record<string, SqlValue> | undefined> {
  const table = `${quoteIdent(row.schema, "schema")}.${quoteIdent(row.table, "table")}`;
  const keyColumns = Object.keys(row.key);
  const where = keyColumns.map((c, i) => `${quoteIdent(c, "column")} = $${i + 1}`).join(" AND ");
  const select = row.columns.length
    ? row.columns.map((c) => `${quoteIdent(c, "column")}::text AS ${quoteIdent(c, "column")}`).join(", ")
    : "1 AS present";
  return withPgClient(target, async (client) => {
    const result = await client.query(
      `SELECT ${select} FROM ${table} WHERE ${where}`,
      keyColumns.map((c) => row.key[c]),
    );
    if (result.rowCount === 0) return undefined;
    if ((result.rowCount ?? 0) > 1)
      throw refusal(
        `${configRowId(row)}: the key matches ${result.rowCount} rows; this project keeps one row per key: delete all but one by hand`,
      );
    const found = result.rows[0] as Record<string, SqlValue>;
    const values: Record<string, SqlValue> = {};
    for (const column of row.columns) values[column] = found[column.toLowerCase()] ?? null;
    return values;
  });
}

/** Deletes the row by its key; true when it was there. */
export async function deleteRow(
  target: pg.PgTarget,
  row: Pick<ConfigRowSpec, "schema" | "table" | "key">,
): Promise<boolean> {
  const table = `${quoteIdent(row.schema, "schema")}.${quoteIdent(row.table, "table")}`;
  const keyColumns = Object.keys(row.key);
  const where = keyColumns.map((c, i) => `${quoteIdent(c, "column")} = $${i + 1}`).join(" AND ");
  const params = keyColumns.map((c) => row.key[c]);
  return withPgClient(target, async (client) =>
    inPgTransaction(client, async () => {
      const result = await client.query(`DELETE FROM ${table} WHERE ${where}`, params);
      return (result.rowCount ?? 0) > 0;
    }),
  );
}

/** Problems with a row's inputs, one per property; identifiers are checked here so that errors show at preview. */
export function configRowProblems(inputs: Partial<ConfigRowState>): { property: string; reason: string }[] {
  const problems: { property: string; reason: string }[] = [];
  const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
  for (const property of ["schema", "table"] as const) {
    if (typeof inputs[property] !== "string" || !identifier.test(inputs[property]))
      problems.push({ property, reason: "must be a safe SQL identifier" });
  }
  const columns = new Set<string>();
  for (const property of ["key", "values"] as const) {
    const record = inputs[property];
    if (!record || typeof record !== "object" || Array.isArray(record)) {
      problems.push({ property, reason: "must be an object of column: value" });
      continue;
    }
    if (property === "key" && Object.keys(record).length === 0)
      problems.push({ property, reason: "must name at least one key column" });
    for (const [column, value] of Object.entries(record)) {
      if (!identifier.test(column))
        problems.push({ property, reason: `column ${JSON.stringify(column)} is not a safe SQL identifier` });
      else if (columns.has(column.toLowerCase()))
        problems.push({ property, reason: `column ${column} appears in both key and values` });
      columns.add(column.toLowerCase());
      const allowsNull = property === "values";
      if (!(typeof value === "string" || (allowsNull && value === null)))
        problems.push({ property, reason: `column ${column} must be a string${allowsNull ? " or null" : ""}` });
    }
  }
  if (typeof inputs.target !== "string" || inputs.target === "")
    problems.push({ property: "target", reason: "must be the database's host:port/database" });
  if (typeof inputs.version !== "number") problems.push({ property: "version", reason: "must be a number" });
  return problems;
}

function rowState(inputs: ConfigRowState): ConfigRowState {
  return pick(inputs, ["target", "schema", "table", "key", "values", "version"]);
}

/**
 * The dynamic provider. A change of target, schema, table or key replaces the row, deleting the old one first
 * (`deleteBeforeReplace`): a row with the new key may collide with the old one's other unique columns. Any other
 * change updates the row in place with an upsert. Every method logs in with the login `configure` read, never one from
 * the state (providers/README.md).
 */
export const configRowProvider: dynamic.ResourceProvider<ConfigRowState, ConfigRowState> = {
  async configure(req) {
    configureLogin(req.config);
  },

  async check(_olds, news) {
    const failures = configRowProblems(news);
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const replaces: string[] = [];
    if (String(olds.target) !== String(news.target)) replaces.push("target");
    if (String(olds.schema).toLowerCase() !== String(news.schema).toLowerCase()) replaces.push("schema");
    if (String(olds.table).toLowerCase() !== String(news.table).toLowerCase()) replaces.push("table");
    if (stableJson(olds.key) !== stableJson(news.key)) replaces.push("key");
    const changes =
      replaces.length > 0 || stableJson(olds.values) !== stableJson(news.values) || olds.version !== news.version;
    return { changes, replaces, deleteBeforeReplace: replaces.length > 0 };
  },

  async create(inputs) {
    await upsertRow(currentLogin(inputs.target, configRowId(inputs)), inputs);
    return { id: configRowId(inputs), outs: rowState(inputs) };
  },

  async read(id, props) {
    if (!props) return { id };
    const current = await readRow(currentLogin(props.target, configRowId(props)), {
      ...props,
      columns: Object.keys(props.values ?? {}),
    });
    // An empty id tells the engine the row is gone: `pulumi refresh` drops it and the next `up` creates it again.
    if (!current) return { id: "" };
    const state = { ...rowState(props), values: current };
    return { id, props: state, inputs: state };
  },

  async update(_id, _olds, news) {
    await upsertRow(currentLogin(news.target, configRowId(news)), news);
    return { outs: rowState(news) };
  },

  async delete(_id, props) {
    await deleteRow(currentLogin(props.target, configRowId(props)), props);
  },
};
