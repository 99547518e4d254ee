/** The CLS load sheet of a stack: built from its `hubExport:cls.exports` folder, in both formats. */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { ClsConfig } from "./schema";
import { PROJECT_ROOT, projectFile } from "./load";
import { buildFromFolder, checkExportFiles } from "../cls/files";
import { loadSheetXlsx } from "../cls/xlsx";
import { loadSheetCsv } from "../cls/csv";
import { buildLoadSheet, type BusinessObjectValues, type LoadSheet } from "../cls/loadSheet";

export interface ClsSheetFiles {
  /** Absent in the offline plan's stand-in (offlineStackSheets). */
  sheet?: LoadSheet;
  csv: string;
  xlsx: Buffer;
  /** Blank and duplicate codes of the exports, one line each (warnings). */
  problems: string[];
  /** Where the exports were read from; "sample data" in local mode. */
  source: string;
}

type BuiltSheetFiles = ClsSheetFiles & { sheet: LoadSheet };

async function files(sheet: LoadSheet, problems: string[], source: string): Promise<BuiltSheetFiles> {
  return { sheet, csv: loadSheetCsv(sheet), xlsx: await loadSheetXlsx(sheet), problems, source };
}

/** The exports folder of the config, relative to the project folder (where Pulumi.yaml is). */
export function exportsFolder(cls: ClsConfig, root: string = PROJECT_ROOT): string {
  return projectFile(cls.exports, "hubExport:cls.exports", root);
}

/** The exports folder and its files' names, none read (cls/files.ts checkExportFiles); the exports' paths. */
export function checkStackExports(cls: ClsConfig, root: string = PROJECT_ROOT): string[] {
  return checkExportFiles(exportsFolder(cls, root), { businessObjects: cls.businessObjects });
}

/**
 * The offline plan's stand-in for the sheets: the exports checked by their names and summarized by a digest of their
 * content and the column mapping, so that a plan still shows the sheets change when they would. Reading the exports
 * and writing the XLSX (ExcelJS) was a fifth of `hub-export plan`; `pulumi preview` and up, and `cls build` build them.
 */
export function offlineStackSheets(cls: ClsConfig, root: string = PROJECT_ROOT): ClsSheetFiles {
  const hash = createHash("sha256").update(JSON.stringify(cls.businessObjects ?? {}));
  for (const file of checkStackExports(cls, root))
    hash.update(path.basename(file)).update("\0").update(fs.readFileSync(file)).update("\0");
  const text = `(not built offline: the sheet of ${cls.exports}, exports sha256 ${hash.digest("hex").slice(0, 16)})\n`;
  return { csv: text, xlsx: Buffer.from(text), problems: [], source: cls.exports };
}

export async function buildStackSheets(cls: ClsConfig, root: string = PROJECT_ROOT): Promise<BuiltSheetFiles> {
  const dir = exportsFolder(cls, root);
  const built = await buildFromFolder(dir, { businessObjects: cls.businessObjects });
  return files(built.sheet, built.problems, cls.exports);
}

/** From code lists in memory (local mode: the sample data's business objects). */
export async function sheetsFromValues(values: BusinessObjectValues, source: string): Promise<BuiltSheetFiles> {
  return files(buildLoadSheet(values), [], source);
}
