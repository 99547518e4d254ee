/**
 * XLSX in and out with ExcelJS: the HR system's exports (first worksheet with data) and the CLS load sheet. The
 * written workbook is byte-for-byte the same for the same sheet (fixed document and zip-entry dates), so that
 * `pulumi preview` shows a change only when the codes change.
 */
import type ExcelJS from "exceljs";
import type JSZip from "jszip";
import { ExportError, type SheetRow } from "./exports";
import { LOAD_SHEET_COLUMNS, type LoadSheet } from "./loadSheet";

// Loaded when a workbook is read or written: every command that can read a CLS file would otherwise pay for ExcelJS.
const excel = () => require("exceljs") as typeof ExcelJS;
const zipLibrary = () => require("jszip") as typeof JSZip;

/** The date written into the workbook's properties and zip entries. */
const FIXED_DATE = new Date(Date.UTC(2000, 0, 1));
export const LOAD_SHEET_WORKSHEET = "CLS";

function cellText(cell: ExcelJS.Cell): string {
  const v = cell.value;
  if (v === null || v === undefined) return "";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  return cell.text ?? "";
}

/** Rows of the first worksheet that has data, with their row numbers. */
export async function parseXlsxRows(file: string, data: Buffer): Promise<SheetRow[]> {
  const workbook = new (excel().Workbook)();
  try {
    await workbook.xlsx.load(data as unknown as ArrayBuffer);
  } catch (err) {
    throw new ExportError(`${file}: is not a readable XLSX workbook: ${(err as Error).message.split("\n")[0]}`);
  }
  const sheet = workbook.worksheets.find((w) => w.actualRowCount > 0);
  if (!sheet) throw new ExportError(`${file}: the workbook has no worksheet with data`);
  const rows: SheetRow[] = [];
  sheet.eachRow({ includeEmpty: false }, (row, line) => {
    const cells: string[] = [];
    for (let c = 1; c <= row.cellCount; c++) cells.push(cellText(row.getCell(c)));
    rows.push({ line, cells });
  });
  return rows;
}

/** The load sheet as an XLSX workbook: one worksheet, a bold frozen header row, the same columns as the CSV. */
export async function loadSheetXlsx(sheet: LoadSheet): Promise<Buffer> {
  const workbook = new (excel().Workbook)();
  workbook.creator = "hub-export";
  workbook.created = FIXED_DATE;
  workbook.modified = FIXED_DATE;
  const ws = workbook.addWorksheet(LOAD_SHEET_WORKSHEET, { views: [{ state: "frozen", ySplit: 1 }] });
  ws.columns = LOAD_SHEET_COLUMNS.map((c) => ({
    header: c,
    key: c,
    width: Math.max(c.length + 2, c === "CLS_DESCRIPTION" ? 40 : 16),
  }));
  ws.getRow(1).font = { bold: true };
  for (const r of sheet.rows) ws.addRow(LOAD_SHEET_COLUMNS.map((c) => r[c]));
  // ExcelJS stamps every zip entry with the current time: repack with a fixed one, compressing once (there).
  const written = Buffer.from(await workbook.xlsx.writeBuffer({ zip: { compression: "STORE" } }));
  const zip = await zipLibrary().loadAsync(written);
  const out = new (zipLibrary())();
  for (const name of Object.keys(zip.files).sort()) {
    const entry = zip.files[name];
    if (!entry.dir) out.file(name, await entry.async("uint8array"), { date: FIXED_DATE, createFolders: false });
  }
  return out.generateAsync({ type: "nodebuffer", compression: "DEFLATE", compressionOptions: { level: 6 } });
}
