/** The CLS load sheet of a stack: built from its `hubExport:cls.exports` folder, in both formats. */
import type { ClsConfig } from "./schema";
import { PROJECT_ROOT, projectFile } from "./load";
import { buildFromFolder, checkExportFiles } from "../cls/files";
import { loadSheetXlsx } from "../cls/xlsx";
import { loadSheetCsv } from "../cls/csv";
import { buildLoadSheet, type BusinessObjectValues, type LoadSheet } from "../cls/loadSheet";

export interface ClsSheetFiles {
  sheet: LoadSheet;
  csv: string;
  xlsx: Buffer;
  /** Blank and duplicate codes of the exports, one line each (warnings). */
  problems: string[];
  /** Where the exports were read from; "sample data" in local mode. */
  source: string;
}

async function files(sheet: LoadSheet, problems: string[], source: string): Promise<ClsSheetFiles> {
  return { sheet, csv: loadSheetCsv(sheet), xlsx: await loadSheetXlsx(sheet), problems, source };
}

/** The exports folder of the config, relative to the project folder (where Pulumi.yaml is). */
export function exportsFolder(cls: ClsConfig, root: string = PROJECT_ROOT): string {
  return projectFile(cls.exports, "hubExport:cls.exports", root);
}

/** The exports folder and its files' names, none read (cls/files.ts checkExportFiles): what `hub-export validate` checks. */
export function checkStackExports(cls: ClsConfig, root: string = PROJECT_ROOT): void {
  checkExportFiles(exportsFolder(cls, root), { businessObjects: cls.businessObjects });
}

export async function buildStackSheets(cls: ClsConfig, root: string = PROJECT_ROOT): Promise<ClsSheetFiles> {
  const dir = exportsFolder(cls, root);
  const built = await buildFromFolder(dir, { businessObjects: cls.businessObjects });
  return files(built.sheet, built.problems, cls.exports);
}

/** From code lists in memory (local mode: the sample data's business objects). */
export async function sheetsFromValues(values: BusinessObjectValues, source: string): Promise<ClsSheetFiles> {
  return files(buildLoadSheet(values), [], source);
}
