/**
 * Bad warehouse rows (task/README.md, "Bad warehouse rows"): those the extract holds back per chunk
 * (HUB_<CLIENT>_ROWS_HELD_BACK), and rows without an employee_id or changed in the future, found by one statement when
 * the extract starts; reported in the log, the run history's `badRows` and `hub-export status`.
 */
import type { ClientBase } from "pg";
import type { RunContext } from "../context";
import { PUBLISH_TABLES } from "../model/schema";
import { SUB_ENTITIES } from "../mapping/userEntity";

const EXAMPLES = 5;

export interface BadRowsReport {
  duplicateIds?: { employees: number; examples: string[] };
  blankIds?: { employees: number; examples: string[] };
  mappingErrors?: { employees: number; examples: { employeeId: string; error: string }[] };
  missingIds?: {
    rows: number;
    examples: { platRegion: string; countryCode: string | null; changedAt: string | null }[];
  };
  futureChangedAt?: {
    rows: number;
    employees: number;
    examples: { employeeId: string; table: string; changedAt: string }[];
  };
}

type Examples<K extends keyof BadRowsReport> = NonNullable<BadRowsReport[K]>["examples"];

/** Each kind's line, in the order they are shown. */
const LINES: { [K in keyof BadRowsReport]-?: (r: NonNullable<BadRowsReport[K]>) => string } = {
  duplicateIds: (r) =>
    `${r.employees} employee_id(s) in more than one employee row, held back (not published): ${r.examples.join(", ")}`,
  blankIds: (r) => `${r.employees} employee_id(s) of white space only, held back (not published)`,
  mappingErrors: (r) =>
    `${r.employees} employee(s) the mapping SQL fails on, held back (not published): ${r.examples.map((e) => `${e.employeeId}: ${e.error}`).join("; ")}`,
  missingIds: (r) =>
    `${r.rows} employee row(s) without an employee_id (NULL or empty), never exported: ${r.examples.map((e) => `${e.platRegion}/${e.countryCode ?? "-"} changed ${e.changedAt ?? "-"}`).join(", ")}`,
  futureChangedAt: (r) =>
    `${r.rows} row(s) of ${r.employees} employee(s) with changed_at in the future, exported once that time has passed: ${r.examples.map((e) => `${e.employeeId} (${e.table} ${e.changedAt})`).join(", ")}`,
};

/** One line per kind found, for the log and `hub-export status`. */
export function badRowLines(r: BadRowsReport): [keyof BadRowsReport, string][] {
  const kinds = Object.keys(LINES) as (keyof BadRowsReport)[];
  return kinds.flatMap((kind) => (r[kind] ? [[kind, (LINES[kind] as (x: unknown) => string)(r[kind])]] : []));
}

/** The rows without an id and the rows changed in the future, of the tenants' platform regions (indexes on changed_at). */
export async function findBadRowsUpFront(ctx: RunContext): Promise<BadRowsReport> {
  const { pool, tables, tenants } = ctx.config;
  const employee = `${tables.publishSchema}.${PUBLISH_TABLES.employee}`;
  const regions = [...new Set(tenants.map((t) => t.platRegion))];
  const report: BadRowsReport = {};
  const future = [
    `SELECT employee_id, '${PUBLISH_TABLES.employee}' AS tbl, changed_at FROM ${employee} WHERE changed_at > localtimestamp AND plat_region = ANY($1::text[])`,
    ...SUB_ENTITIES.map(
      (
        s,
      ) => `SELECT x.employee_id, '${s.table}', x.changed_at FROM ${tables.publishSchema}.${s.table} x JOIN ${employee} e ON e.employee_id = x.employee_id
               WHERE x.changed_at > localtimestamp AND e.plat_region = ANY($1::text[])`,
    ),
  ].join("\n UNION ALL ");
  // Two independent statements, side by side on the pool.
  const [{ rows: missing }, { rows: ahead }] = await Promise.all([
    pool.query<{ rows: number; examples: Examples<"missingIds"> | null }>(
      `SELECT count(*)::int AS rows, (array_agg(json_build_object('platRegion', plat_region, 'countryCode', country_code, 'changedAt', to_char(changed_at, 'YYYY-MM-DD"T"HH24:MI:SS')) ORDER BY changed_at))[1:${EXAMPLES}] AS examples
         FROM ${employee} WHERE (employee_id IS NULL OR employee_id = '') AND plat_region = ANY($1::text[])`,
      [regions],
    ),
    pool.query<{ rows: number; employees: number; examples: Examples<"futureChangedAt"> | null }>(
      `WITH f AS (${future})
       SELECT count(*)::int AS rows, count(DISTINCT employee_id)::int AS employees,
              (array_agg(json_build_object('employeeId', employee_id, 'table', tbl, 'changedAt', to_char(changed_at, 'YYYY-MM-DD"T"HH24:MI:SS')) ORDER BY changed_at DESC))[1:${EXAMPLES}] AS examples
         FROM f`,
      [regions],
    ),
  ]);
  if (missing[0].rows) report.missingIds = { rows: missing[0].rows, examples: missing[0].examples ?? [] };
  if (ahead[0].rows)
    report.futureChangedAt = { rows: ahead[0].rows, employees: ahead[0].employees, examples: ahead[0].examples ?? [] };
  return report;
}

/** What the extract held back in this run (HUB_<CLIENT>_ROWS_HELD_BACK rows naming it). */
export async function heldBackBy(ctx: RunContext, client: ClientBase): Promise<BadRowsReport> {
  const { rows } = await client.query<{
    kind: string;
    employees: number;
    examples: { employeeId: string; reason: string }[];
  }>(
    `SELECT kind, count(*)::int AS employees, (array_agg(json_build_object('employeeId', employee_id, 'reason', reason) ORDER BY employee_id))[1:${EXAMPLES}] AS examples
       FROM ${ctx.config.tables.rowsHeldBack} WHERE held_by = $1 GROUP BY kind`,
    [ctx.run.transactionId],
  );
  const report: BadRowsReport = {};
  for (const r of rows) {
    if (r.kind === "DUPLICATE_ID")
      report.duplicateIds = { employees: r.employees, examples: r.examples.map((e) => e.employeeId) };
    else if (r.kind === "BLANK_ID")
      report.blankIds = { employees: r.employees, examples: r.examples.map((e) => JSON.stringify(e.employeeId)) };
    else
      report.mappingErrors = {
        employees: r.employees,
        examples: r.examples.map((e) => ({ employeeId: e.employeeId, error: e.reason })),
      };
  }
  return report;
}

/** The employees held back by earlier runs: each chunk looks at them again. */
export async function heldEmployees(ctx: RunContext): Promise<string[]> {
  const { rows } = await ctx.config.pool.query<{ employee_id: string }>(
    `SELECT employee_id FROM ${ctx.config.tables.rowsHeldBack}`,
  );
  return rows.map((r) => r.employee_id);
}

/** Whether employee_id has a unique index (then no employee_id can be in two rows, and the extract need not count them). */
export async function employeeIdUnique(ctx: RunContext): Promise<boolean> {
  const { rows } = await ctx.config.pool.query<{ unique: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'employee_id'
     ) AS unique`,
    [`${ctx.config.tables.publishSchema}.${PUBLISH_TABLES.employee}`],
  );
  return rows[0].unique;
}

/** Logs each kind of bad row once (a warning naming what to fix). */
export function logBadRows(ctx: RunContext, report: BadRowsReport): void {
  for (const [kind, line] of badRowLines(report))
    ctx.log.warn({ event: "extract.badRows", kind, ...report[kind] }, line);
}
