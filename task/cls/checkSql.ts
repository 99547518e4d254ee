/**
 * The unknown-code comparison as SQL, set-based: the codes of every CLS code field (`codes(message_id, employee_id,
 * field, code)`) against the load sheet (`known(field, code)`, from two array parameters), from stored hub messages (a
 * run) or from the publish schema (`hub-export cls check`). Field names are `Entity.Field` (core/clsTable.ts).
 */
import { CLS_TABLE, fieldName, fieldsByEntity, type ClsEntity } from "../../core/clsTable";
import { SUB_ENTITIES, userFields } from "../mapping/userEntity";
import { PUBLISH_TABLES } from "../model/schema";

const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** `(VALUES ('User.CountryCode', <expr>), ...) AS v(field, code)` for the code fields of one entity. */
function valuesOf(entity: ClsEntity, expr: (field: string) => string): string {
  const fields = fieldsByEntity().get(entity) ?? [];
  return `(VALUES ${fields.map((f) => `(${literal(fieldName({ entity, field: f }))}, ${expr(f)})`).join(", ")}) AS v(field, code)`;
}

/** The sheet's known codes: `known(field, code)` from two text[] parameters (fields, codes). */
export function knownCte(fields: string, codes: string): string {
  return `known AS (SELECT DISTINCT field, code FROM unnest(${fields}::text[], ${codes}::text[]) AS k(field, code))`;
}

/**
 * `codes` over the messages of CTE `batch(message_id, body)`: each body is parsed once (users), then every User
 * and sub-entity array yields its code fields. Nulls are not codes: nothing is sent for them.
 */
export function messageCodesCtes(): string {
  const subs = [...fieldsByEntity().keys()].filter((e) => e !== "User");
  const parts = [
    `SELECT u.message_id, u.employee_id, v.field, v.code FROM users u CROSS JOIN LATERAL ${valuesOf("User", (f) => `u.u ->> ${literal(f)}`)} WHERE v.code IS NOT NULL`,
    ...subs.map(
      (e) =>
        `SELECT u.message_id, u.employee_id, v.field, v.code FROM users u CROSS JOIN LATERAL jsonb_array_elements(coalesce(u.u -> ${literal(e)}, '[]'::jsonb)) AS s CROSS JOIN LATERAL ${valuesOf(e, (f) => `s ->> ${literal(f)}`)} WHERE v.code IS NOT NULL`,
    ),
  ];
  return `users AS MATERIALIZED (
    SELECT b.message_id, x.u, x.u ->> 'UserId' AS employee_id FROM batch b CROSS JOIN LATERAL jsonb_array_elements(b.body::jsonb -> 'entities') AS x(u)
  ),
  codes AS (
    ${parts.join("\n    UNION ALL\n    ")}
  )`;
}

/**
 * `codes` over the publish schema: the employees of platform regions $1 with their sub-entities, mapped with the
 * export's own field expressions (EmpTypeDefault $4 and EmpGenderDefault $5 included), so that the same codes are
 * compared as a run would send.
 */
export function publishCodesCtes(publishSchema: string): string {
  // $2 and $3 are the known codes (knownCte).
  const pub = (t: string) => `${publishSchema}.${t}`;
  const user = new Map(userFields("$4::text", "$5::text"));
  const parts = [
    `SELECT NULL::uuid AS message_id, e.employee_id, v.field, v.code FROM ${pub(PUBLISH_TABLES.employee)} e CROSS JOIN LATERAL ${valuesOf("User", (f) => user.get(f)!)} WHERE e.plat_region = ANY($1::text[]) AND v.code IS NOT NULL`,
    ...SUB_ENTITIES.filter((s) => fieldsByEntity().has(s.name)).map((s) => {
      const fields = new Map(s.fields);
      return `SELECT NULL::uuid, x.employee_id, v.field, v.code FROM ${pub(s.table)} x JOIN ${pub(PUBLISH_TABLES.employee)} e ON e.employee_id = x.employee_id CROSS JOIN LATERAL ${valuesOf(s.name, (f) => fields.get(f)!)} WHERE e.plat_region = ANY($1::text[]) AND v.code IS NOT NULL`;
    }),
  ];
  return `codes AS (
    ${parts.join("\n    UNION ALL\n    ")}
  )`;
}

/** The CLS code fields (`Entity.Field`) in CLS table order: the check at the source takes one text[] per field. */
export const CODE_FIELDS: readonly string[] = CLS_TABLE.map(fieldName);

/** The sheet's codes per field of CODE_FIELDS (the sheet's rows as parallel `Entity.Field` and code lists). */
export function knownCodesByField(fields: readonly string[], codes: readonly string[]): string[][] {
  const byField = new Map(CODE_FIELDS.map((f) => [f, new Set<string>()]));
  fields.forEach((f, i) => byField.get(f)?.add(codes[i]));
  return CODE_FIELDS.map((f) => [...byField.get(f)!]);
}

/**
 * The check at the source (the extract statement, task/mapping/extractSql.ts): the same code expressions as the
 * mapping's, compared with the sheet's codes of their field (`known(field)`: a text[] parameter, which PostgreSQL
 * hashes as a constant) before they become JSON. Each code costs one lookup of itself; its `Entity.Field=code` key is
 * built only when it is unknown. `user`: a text[] of the unknown keys of employee row e; `sub(table)`: the aggregates
 * over sub-entity rows x, one text[] per code field, each key once per row, as in the body. Both are null when every
 * code is known, so that the common case builds no array.
 */
export function sourceCodeChecks(
  known: (field: string) => string,
  typeDefault: string,
  genderDefault: string,
): { user: string; sub(table: string): string[] } {
  const check = (entity: ClsEntity, field: string, expr: string) => ({
    key: `(${literal(`${entity}.${field}=`)} || ${expr})`,
    unknown: `${expr} IS NOT NULL AND NOT ${expr} = ANY(${known(`${entity}.${field}`)}::text[])`,
  });
  const user = new Map(userFields(typeDefault, genderDefault));
  const userChecks = (fieldsByEntity().get("User") ?? []).map((f) => check("User", f, user.get(f)!));
  return {
    user: `CASE WHEN ${userChecks.map((c) => `(${c.unknown})`).join(" OR ")} THEN array_remove(ARRAY[${userChecks.map((c) => `CASE WHEN ${c.unknown} THEN ${c.key} END`).join(", ")}], NULL) END`,
    sub(table) {
      const s = SUB_ENTITIES.find((x) => x.table === table)!;
      const fields = new Map(s.fields);
      return (fieldsByEntity().get(s.name) ?? []).map((f) => {
        const c = check(s.name, f, fields.get(f)!);
        return `array_agg(${c.key}) FILTER (WHERE ${c.unknown})`;
      });
    },
  };
}

/** Per unknown (field, code): occurrences and distinct employees. Needs CTEs codes and known. */
export const UNKNOWN_CTE = `unknown AS (
    SELECT c.* FROM codes c WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.field = c.field AND k.code = c.code)
  )`;

export const UNKNOWN_BY_CODE = `SELECT field, code, count(*)::int AS occurrences, count(DISTINCT employee_id)::int AS employees FROM unknown GROUP BY field, code`;

/** Every CLS field has an expression in the export's mapping: checked once, so that a new CLS row cannot go unchecked. */
export function uncheckedFields(): string[] {
  const user = new Map(userFields("$4", "$5"));
  return CLS_TABLE.filter((r) =>
    r.entity === "User"
      ? !user.has(r.field)
      : !SUB_ENTITIES.find((s) => s.name === r.entity)?.fields.some(([f]) => f === r.field),
  ).map(fieldName);
}
