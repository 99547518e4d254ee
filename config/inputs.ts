/**
 * The files a stack's config names, read and checked before anything is declared: the CLS load sheets built from
 * `hubExport:cls.exports` and the vendor scripts release of `hubExport:scriptsRelease.zip`. The program
 * (components/program.ts), so `hub-export plan` too, reads them with loadStackInputs, and `hub-export validate` checks
 * them with checkStackInputs, which reads the release but of the exports only their names; a problem is a UserError
 * naming the key.
 */
import type { StackConfig } from "./schema";
import { loadScriptsRelease, type LoadedScriptsRelease } from "./load";
import { buildStackSheets, checkStackExports, type ClsSheetFiles } from "./clsSheets";

export interface StackInputs {
  cls?: ClsSheetFiles;
  scriptsRelease?: LoadedScriptsRelease;
}

export async function loadStackInputs(config: StackConfig, given: StackInputs = {}): Promise<StackInputs> {
  return {
    cls: given.cls ?? (config.cls ? await buildStackSheets(config.cls) : undefined),
    scriptsRelease:
      given.scriptsRelease ?? (config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined),
  };
}

/**
 * What validate checks: the scripts release read in full, the CLS exports by their files' names (reading them, XLSX
 * with ExcelJS, was more than half of validate's time; `plan` and `cls build --stack` read them).
 */
export async function checkStackInputs(config: StackConfig): Promise<{ scriptsRelease?: LoadedScriptsRelease }> {
  if (config.cls) checkStackExports(config.cls);
  return { scriptsRelease: config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined };
}
