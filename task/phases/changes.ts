/**
 * Which employees a run must map (task/README.md, "Publish schema indexes"): when few rows changed since the earliest
 * watermark, only their employees (incremental mode); when many, every employee (full mode). The list is a superset:
 * the chunk statement still decides per tenant and country, so both modes export the same employees.
 */
import type { ClientBase } from "pg";
import type { RunContext } from "../context";
import { PUBLISH_TABLES } from "../model/schema";
import { SUB_ENTITIES } from "../mapping/userEntity";
import { round } from "../log";

/** The tables whose changed_at finds changes: the employee's and each sub-entity's. */
export const CHANGE_TABLES: readonly string[] = [PUBLISH_TABLES.employee, ...SUB_ENTITIES.map((s) => s.table)];

/** Incremental mode when the changed rows are at most this share of the employees (and at least one chunk's worth). */
const INCREMENTAL_SHARE = 0.1;

export interface ChangeLookup {
  mode: "incremental" | "full";
  /** The earliest watermark of the run's tenants (idl_date for a tenant without one): changes after it are looked up. */
  since: string;
  /** Changed rows found (all tables, up to the incremental limit + 1: more means full mode). */
  changedRows: number;
  /** The changed rows found per publish table (of CHANGE_TABLES); in full mode only up to the limit. (These three are absent from the run history of runs of earlier builds.) */
  rowsByTable?: Record<string, number>;
  /** The most changed rows incremental mode takes: more, and every employee is mapped. */
  limit?: number;
  /** No tenant of the run has a watermark yet: its changes since idl_date are its first load (every employee). */
  firstLoad?: boolean;
  /** Seconds the lookup took (a scan of each table without an index on changed_at). */
  seconds: number;
  /** Tables of the publish schema without an index whose first column is changed_at. */
  missingIndexes: string[];
  /** Incremental mode: the employees to map (changed or held back), unsorted, possibly repeated. */
  employees?: string[];
}

/**
 * The changed_at indexes' DDL: what the warning tells the warehouse team to run for the tables without one. The same
 * statements as task/model/publish_schema.sql and task/README.md, "Publish schema indexes" (a test compares them).
 */
export function changeIndexDdl(schema: string, tables: readonly string[] = CHANGE_TABLES): string[] {
  return tables.map((t) => `CREATE INDEX IF NOT EXISTS ${t}_changed_idx ON ${schema}.${t} (changed_at);`);
}

/** The publish tables (of CHANGE_TABLES) without a valid, non-partial index whose first column is changed_at. */
export async function missingChangeIndexes(
  db: ClientBase | RunContext["config"]["pool"],
  schema: string,
): Promise<string[]> {
  const { rows } = await db.query<{ tbl: string }>(
    `SELECT t.tbl FROM unnest($2::text[]) AS t(tbl)
      WHERE NOT EXISTS (
        SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
         WHERE i.indrelid = to_regclass(quote_ident($1) || '.' || quote_ident(t.tbl)) AND i.indisvalid AND i.indpred IS NULL AND a.attname = 'changed_at'
      )
      ORDER BY array_position($2::text[], t.tbl)`,
    [schema, CHANGE_TABLES],
  );
  return rows.map((r) => r.tbl);
}

/**
 * Looks the changes up when the extract starts: the earliest watermark of the run's tenants, then up to the
 * incremental limit + 1 changed rows after it. Missing changed_at indexes are warned about once (the run works, each
 * such table is scanned).
 */
export async function lookUpChanges(ctx: RunContext, held: string[]): Promise<ChangeLookup> {
  const started = Date.now();
  const { pool, tables, tenants, definition } = ctx.config;
  const p = definition.parameters;
  const missingIndexes = await missingChangeIndexes(pool, tables.publishSchema);
  const { rows: floor } = await pool.query<{ since: string; employees: number; first_load: boolean | null }>(
    `SELECT to_char(min(coalesce(w.since, $2::timestamp)), 'YYYY-MM-DD"T"HH24:MI:SS.US') AS since, bool_and(w.since IS NULL) AS first_load,
            (SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass($4))::float8 AS employees
       FROM unnest($3::text[]) AS t(hub_tenant_id)
       LEFT JOIN LATERAL (SELECT min(changed_through) AS since FROM ${tables.watermark} w WHERE w.plat_client_name = $1 AND w.hub_tenant_id = t.hub_tenant_id) w ON true`,
    [
      p.client_name,
      p.idl_date,
      tenants.map((x) => x.hubTenantId),
      `${tables.publishSchema}.${PUBLISH_TABLES.employee}`,
    ],
  );
  const since = floor[0].since;
  const limit = Math.max(ctx.settings.chunkSize, Math.floor((floor[0].employees ?? 0) * INCREMENTAL_SHARE));
  const changed = CHANGE_TABLES.map(
    (t) => `SELECT '${t}' AS tbl, employee_id FROM ${tables.publishSchema}.${t} WHERE changed_at > $1::timestamp`,
  ).join("\n UNION ALL ");
  const { rows } = await pool.query<{ tbl: string; employee_id: string }>(
    `SELECT tbl, employee_id FROM (${changed}) c LIMIT $2`,
    [since, limit + 1],
  );
  const incremental = rows.length <= limit;
  const rowsByTable: Record<string, number> = {};
  for (const r of rows) rowsByTable[r.tbl] = (rowsByTable[r.tbl] ?? 0) + 1;
  const lookup: ChangeLookup = {
    mode: incremental ? "incremental" : "full",
    since,
    firstLoad: floor[0].first_load === true,
    changedRows: rows.length,
    rowsByTable,
    limit,
    seconds: round((Date.now() - started) / 1000),
    missingIndexes,
    ...(incremental ? { employees: [...rows.map((r) => r.employee_id), ...held] } : {}),
  };
  if (missingIndexes.length) {
    ctx.log.warn(
      {
        event: "extract.changeIndexes",
        missing: missingIndexes,
        seconds: lookup.seconds,
        create: changeIndexDdl(tables.publishSchema, missingIndexes),
      },
      `the publish schema has no index on changed_at for ${missingIndexes.join(", ")}: finding the changed employees scans ${missingIndexes.length === 1 ? "it" : "them"} (${lookup.seconds} s this run); create the indexes (task/README.md, "Publish schema indexes")`,
    );
  }
  const { missingIndexes: _missing, employees: _employees, ...shown } = lookup;
  ctx.log.info(
    { event: "extract.changes", ...shown },
    incremental ? "few changes: only the changed employees are mapped" : "many changes: every employee is mapped",
  );
  return lookup;
}

/** The employees of `ids` after `after` and up to `last` (null: no end), distinct and sorted by PostgreSQL's collation. */
export async function partEmployees(
  client: ClientBase | RunContext["config"]["pool"],
  ids: string[],
  after: string,
  last: string | null,
): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT DISTINCT id FROM unnest($1::text[]) AS u(id) WHERE id > $2 AND ($3::text IS NULL OR id <= $3) ORDER BY id`,
    [ids, after, last],
  );
  return rows.map((r) => r.id);
}

/** Incremental mode: the watermarks of the run's tenants that exist advance too (every change after them is mapped). */
export async function watermarkPairs(ctx: RunContext): Promise<[string, string][]> {
  const { pool, tables, tenants, definition } = ctx.config;
  const { rows } = await pool.query<{ hub_tenant_id: string; country_code: string }>(
    `SELECT hub_tenant_id, country_code FROM ${tables.watermark} WHERE plat_client_name = $1 AND hub_tenant_id = ANY($2::text[])`,
    [definition.parameters.client_name, tenants.map((x) => x.hubTenantId)],
  );
  return rows.map((r) => [r.hub_tenant_id, r.country_code]);
}
