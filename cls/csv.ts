/**
 * CSV in and out (csv-parse, csv-stringify): the HR system's exports and the CLS load sheet. No spreadsheet library
 * here, so that the export task's bundle can read the load sheet without it.
 */
import { parse } from "csv-parse/sync";
import { stringify } from "csv-stringify/sync";
import { UserError } from "../core/errors";
import { ExportError, type SheetRow } from "./exports";
import { LOAD_SHEET_COLUMNS, type LoadSheet, type LoadSheetRow } from "./loadSheet";
import { CLS_SYSTEM, CLS_TABLE } from "../core/clsTable";

/** The delimiter of a CSV file: the one of , ; and tab found most often in its first line (spreadsheets in many locales write ;). */
export function sniffDelimiter(text: string): string {
  const first = text
    .replace(/^\uFEFF/, "")
    .split(/\r?\n/, 1)[0]
    .replace(/"[^"]*"/g, "");
  const counts = [",", ";", "\t"].map((d) => [d, first.split(d).length - 1] as const);
  const best = counts.reduce((a, b) => (b[1] > a[1] ? b : a));
  return best[1] > 0 ? best[0] : ",";
}

/** Rows of a CSV file with their line numbers; a byte-order mark is dropped. */
export function parseCsvRows(file: string, text: string): SheetRow[] {
  if (text.includes("\u0000"))
    throw new ExportError(
      `${file}: is not a text CSV file (it holds binary data); export the business object to CSV or XLSX again`,
    );
  try {
    const records = parse(text, {
      bom: true,
      delimiter: sniffDelimiter(text),
      relax_column_count: true,
      skip_empty_lines: false,
      info: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
    return records.map((r) => ({ line: r.info.lines, cells: r.record.map(String) }));
  } catch (err) {
    throw new ExportError(`${file}: is not a readable CSV file: ${(err as Error).message.split("\n")[0]}`);
  }
}

/** The load sheet as CSV: a header row and one row per code, comma-separated, UTF-8, \n line ends. */
export function loadSheetCsv(sheet: LoadSheet): string {
  return stringify(
    sheet.rows.map((r) => LOAD_SHEET_COLUMNS.map((c) => r[c])),
    { header: true, columns: [...LOAD_SHEET_COLUMNS] },
  );
}

/** A load sheet read back from CSV (the current sheet a run checks against); every row is checked against the CLS table. */
export function parseLoadSheetCsv(source: string, text: string): LoadSheet {
  let records: string[][];
  try {
    records = parse(text, { bom: true, relax_column_count: true, skip_empty_lines: true });
  } catch (err) {
    throw new UserError(`${source}: is not a readable CLS load sheet (CSV): ${(err as Error).message.split("\n")[0]}`);
  }
  const header = records[0]?.map((h) => h.trim()) ?? [];
  if (LOAD_SHEET_COLUMNS.some((c, i) => header[i] !== c)) {
    throw new UserError(
      `${source}: is not a CLS load sheet: expected the columns ${LOAD_SHEET_COLUMNS.join(", ")}, found ${header.join(", ") || "nothing"}`,
    );
  }
  const fields = new Set(CLS_TABLE.map((r) => `${r.entity}.${r.field}`));
  const problems: string[] = [];
  const rows: LoadSheetRow[] = [];
  records.slice(1).forEach((cells, i) => {
    const [SYSTEM, CLS_ENTITY_NAME, CLS_CODE_FIELD_NAME, CLS_CODE, CLS_DESCRIPTION] = cells.map((c) => c.trim());
    const where = `${source} row ${i + 2}`;
    if (SYSTEM !== CLS_SYSTEM) problems.push(`${where}: SYSTEM must be ${CLS_SYSTEM}, found '${SYSTEM ?? ""}'`);
    else if (!fields.has(`${CLS_ENTITY_NAME}.${CLS_CODE_FIELD_NAME}`))
      problems.push(`${where}: ${CLS_ENTITY_NAME}.${CLS_CODE_FIELD_NAME} is not a code field of the CLS table`);
    else if (!CLS_CODE) problems.push(`${where}: blank CLS_CODE`);
    else rows.push({ SYSTEM, CLS_ENTITY_NAME, CLS_CODE_FIELD_NAME, CLS_CODE, CLS_DESCRIPTION: CLS_DESCRIPTION ?? "" });
  });
  if (problems.length)
    throw new UserError([
      `${source}: is not a valid CLS load sheet (${problems.length} problem${problems.length === 1 ? "" : "s"}):`,
      ...problems.slice(0, 20).map((p) => `  ${p}`),
    ]);
  return { rows };
}
