/**
 * The file edges of the CLS domain: a folder of the HR system's exports in (CSV or XLSX, one file per business
 * object), the load sheet out (CSV or XLSX). Everything in between is pure (exports.ts, loadSheet.ts).
 */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../core/errors";
import { BUSINESS_OBJECTS, type BusinessObject, type CodeValue } from "../core/clsTable";
import {
  businessObjectOfFile,
  ExportError,
  readCodeList,
  type CodeList,
  type ExportMapping,
  type SheetRow,
} from "./exports";
import { buildLoadSheet, type LoadSheet } from "./loadSheet";
import { loadSheetXlsx, parseXlsxRows } from "./xlsx";
import { loadSheetCsv, parseCsvRows, parseLoadSheetCsv } from "./csv";
import { stringify } from "csv-stringify/sync";

export const EXPORT_EXTENSIONS = [".csv", ".xlsx"] as const;

export interface ReadExportsOptions {
  /** Per business object: its file name in the folder and/or its column names (hubExport:cls.businessObjects). */
  businessObjects?: Partial<Record<BusinessObject, ExportMapping>>;
}

export interface BuiltSheet {
  sheet: LoadSheet;
  lists: CodeList[];
  /** Blank and duplicate codes, one line each. */
  problems: string[];
}

async function readRows(file: string, full: string): Promise<SheetRow[]> {
  const data = fs.readFileSync(full);
  if (full.toLowerCase().endsWith(".xlsx")) {
    return parseXlsxRows(file, data);
  }
  return parseCsvRows(file, data.toString("utf8"));
}

interface ExportFiles {
  /** Each business object's export: a file name in the folder. */
  files: Map<BusinessObject, string>;
  /** What the names show: an unknown file, a second export, a mapped file that is not there. */
  errors: string[];
  /** The business objects without an export, as one line (or none). */
  missing: string[];
}

/** Each business object's export in `dir`, found by the files' names alone (no file is read). */
function exportFiles(dir: string, mappings: NonNullable<ReadExportsOptions["businessObjects"]>): ExportFiles {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir).sort();
  } catch (err) {
    throw new UserError(
      `${dir}: cannot read the folder of exports (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const byFile = new Map<string, BusinessObject>();
  for (const b of BUSINESS_OBJECTS) if (mappings[b]?.file) byFile.set(mappings[b].file, b);
  const errors: string[] = [];
  const files = new Map<BusinessObject, string>();
  const spreadsheets = entries.filter(
    (e) => EXPORT_EXTENSIONS.some((x) => e.toLowerCase().endsWith(x)) && !e.startsWith(".") && !e.startsWith("~$"),
  );
  for (const name of byFile.keys())
    if (!spreadsheets.includes(name))
      errors.push(`${path.join(dir, name)}: not found (hubExport:cls.businessObjects["${byFile.get(name)}"].file)`);
  for (const name of spreadsheets) {
    const mapped = byFile.get(name);
    const named = businessObjectOfFile(name);
    // A file named after a business object that the config maps to another file is not used.
    const b = mapped ?? (named && !mappings[named]?.file ? named : undefined);
    if (!b) {
      if (!named)
        errors.push(
          `${path.join(dir, name)}: not the export of a known business object: name the file after one of ${BUSINESS_OBJECTS.join(", ")}, or map it in hubExport:cls.businessObjects.<name>.file`,
        );
      continue;
    }
    const other = files.get(b);
    if (other) errors.push(`${path.join(dir, name)}: a second export of ${b} (the first is ${other}): keep one`);
    else files.set(b, name);
  }
  const absent = BUSINESS_OBJECTS.filter((b) => !files.has(b));
  const missing = absent.length
    ? [`${dir}: no export of ${absent.join(", ")} (files seen: ${spreadsheets.join(", ") || "none"})`]
    : [];
  return { files, errors, missing };
}

function cannotBuild(dir: string, errors: string[]): UserError {
  return new UserError([
    `cannot build the CLS load sheet from ${dir} (${errors.length} problem${errors.length === 1 ? "" : "s"}):`,
    ...errors.map((e) => `  ${e}`),
  ]);
}

/**
 * What the names of a folder of exports show, without reading a file: that the folder can be read and holds one export
 * of each business object, and no file it cannot use (the same UserError as buildFromFolder). The exports' paths.
 */
export function checkExportFiles(dir: string, options: ReadExportsOptions = {}): string[] {
  const { files, errors, missing } = exportFiles(dir, options.businessObjects ?? {});
  if (errors.length || missing.length) throw cannotBuild(dir, [...errors, ...missing]);
  return BUSINESS_OBJECTS.map((b) => path.join(dir, files.get(b)!));
}

/**
 * Reads a folder of exports and builds the load sheet. Every file that cannot be used, and every business object
 * without an export, is reported at once (UserError, one line each).
 */
export async function buildFromFolder(dir: string, options: ReadExportsOptions = {}): Promise<BuiltSheet> {
  const mappings = options.businessObjects ?? {};
  const { files, errors, missing } = exportFiles(dir, mappings);
  const lists: CodeList[] = [];
  for (const [b, name] of files) {
    const full = path.join(dir, name);
    try {
      lists.push(readCodeList(full, b, await readRows(full, full), mappings[b]));
    } catch (err) {
      if (err instanceof ExportError) errors.push(err.message);
      else throw err;
    }
  }
  if (errors.length || missing.length) throw cannotBuild(dir, [...errors, ...missing]);
  const values: Partial<Record<BusinessObject, CodeValue[]>> = Object.fromEntries(
    lists.map((l) => [l.businessObject, l.values]),
  );
  return { sheet: buildLoadSheet(values), lists, problems: lists.flatMap((l) => l.problems) };
}

/** The sheet in the format its file name asks for: .csv or .xlsx. */
export async function loadSheetFile(file: string, sheet: LoadSheet): Promise<Buffer> {
  const ext = path.extname(file).toLowerCase();
  if (ext === ".csv") return Buffer.from(loadSheetCsv(sheet), "utf8");
  if (ext === ".xlsx") {
    return loadSheetXlsx(sheet);
  }
  throw new UserError(
    `${file}: the load sheet is written as .csv or .xlsx; name the file with one of these extensions`,
  );
}

export async function writeLoadSheet(file: string, sheet: LoadSheet): Promise<void> {
  const data = await loadSheetFile(file, sheet);
  // Explicit modes: under `umask 000` nothing is world-writable (a stricter umask makes them stricter still).
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o755 });
  fs.writeFileSync(file, data, { mode: 0o644 });
}

/** A load sheet file (.csv or .xlsx, as `cls build` writes it), checked row by row. */
export async function readLoadSheetFile(file: string): Promise<LoadSheet> {
  let data: Buffer;
  try {
    data = fs.readFileSync(file);
  } catch (err) {
    throw new UserError(
      `${file}: cannot read the CLS load sheet (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  if (!file.toLowerCase().endsWith(".xlsx")) return parseLoadSheetCsv(file, data.toString("utf8"));
  let rows: SheetRow[];
  try {
    rows = await parseXlsxRows(file, data);
  } catch (err) {
    if (err instanceof ExportError) throw new UserError(err.message);
    throw err;
  }
  return parseLoadSheetCsv(file, stringify(rows.map((r) => r.cells)));
}
