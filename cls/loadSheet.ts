/**
 * The CLS load sheet, built with no I/O from the code lists of the business objects: one row per code of each of the
 * CLS table's 20 rows (core/clsTable.ts), SYSTEM EXTERNAL. The fixed lists are built in. The same sheet is what `cls build`
 * writes, what `pulumi up` uploads to the bucket's hub-configuration folder, and what a run checks its codes against.
 */
import {
  BUSINESS_OBJECTS,
  CLS_SYSTEM,
  CLS_TABLE,
  fieldName,
  type BusinessObject,
  type CodeValue,
} from "../core/clsTable";

/** The sheet's columns, in order. The specification names the first three; the code and description are ours. */
export const LOAD_SHEET_COLUMNS = [
  "SYSTEM",
  "CLS_ENTITY_NAME",
  "CLS_CODE_FIELD_NAME",
  "CLS_CODE",
  "CLS_DESCRIPTION",
] as const;

export interface LoadSheetRow {
  SYSTEM: string;
  CLS_ENTITY_NAME: string;
  CLS_CODE_FIELD_NAME: string;
  CLS_CODE: string;
  CLS_DESCRIPTION: string;
}

export interface LoadSheet {
  rows: LoadSheetRow[];
}

export type BusinessObjectValues = Partial<Record<BusinessObject, readonly CodeValue[]>>;

/** The business objects a set of code lists lacks. */
export function missingBusinessObjects(lists: BusinessObjectValues): BusinessObject[] {
  return BUSINESS_OBJECTS.filter((b) => !lists[b]?.length);
}

/** The whole sheet; every business object must have its list (see missingBusinessObjects). */
export function buildLoadSheet(lists: BusinessObjectValues): LoadSheet {
  const missing = missingBusinessObjects(lists);
  if (missing.length) throw new Error(`no values for business object(s) ${missing.join(", ")}`);
  const rows: LoadSheetRow[] = [];
  for (const row of CLS_TABLE) {
    const values = "fixed" in row.source ? row.source.fixed : lists[row.source.businessObject]!;
    for (const v of values)
      rows.push({
        SYSTEM: CLS_SYSTEM,
        CLS_ENTITY_NAME: row.entity,
        CLS_CODE_FIELD_NAME: row.field,
        CLS_CODE: v.code,
        CLS_DESCRIPTION: v.description,
      });
  }
  return { rows };
}

/** The known codes per code field (`User.RoleCode` → codes). */
export function knownCodes(sheet: LoadSheet): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const row of CLS_TABLE) out.set(fieldName(row), new Set());
  for (const r of sheet.rows) {
    const key = fieldName({ entity: r.CLS_ENTITY_NAME as never, field: r.CLS_CODE_FIELD_NAME });
    out.get(key)?.add(r.CLS_CODE);
  }
  return out;
}

/** Rows per code field, for summaries: `User.RoleCode` → 12. */
export function rowCounts(sheet: LoadSheet): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of CLS_TABLE) counts[fieldName(row)] = 0;
  for (const r of sheet.rows)
    counts[`${r.CLS_ENTITY_NAME}.${r.CLS_CODE_FIELD_NAME}`] =
      (counts[`${r.CLS_ENTITY_NAME}.${r.CLS_CODE_FIELD_NAME}`] ?? 0) + 1;
  return counts;
}
