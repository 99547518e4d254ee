/**
 * The files a stack's config names, read and checked before anything is declared: the CLS load sheets built from
 * `hubExport:cls.exports` and the vendor scripts release of `hubExport:scriptsRelease.zip`. The program
 * (components/program.ts) reads them with loadStackInputs, and `hub-export validate` checks them with
 * checkStackInputs; both read the release, and check the exports' names as the offline plan does (reading the exports
 * is for the commands that build the sheets). A problem is a UserError naming the key.
 */
import type { ClsConfig, StackConfig } from "./schema";
import { loadScriptsRelease, type LoadedScriptsRelease } from "./load";
import { buildStackSheets, checkStackExports, offlineStackSheets, type ClsSheetFiles } from "./clsSheets";

export interface StackInputs {
  cls?: ClsSheetFiles;
  scriptsRelease?: LoadedScriptsRelease;
}

/** `standIn` (the offline plan): the CLS sheets' stand-in, config/clsSheets.ts offlineStackSheets. */
export async function loadStackInputs(
  config: StackConfig,
  given: StackInputs = {},
  standIn = false,
): Promise<StackInputs> {
  const sheets = (cls: ClsConfig) => (standIn ? offlineStackSheets(cls) : buildStackSheets(cls));
  return {
    cls: given.cls ?? (config.cls ? await sheets(config.cls) : undefined),
    scriptsRelease:
      given.scriptsRelease ?? (config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined),
  };
}

/** What validate checks: the scripts release, and the CLS exports by their files' names (offlineStackSheets' check). */
export async function checkStackInputs(config: StackConfig): Promise<{ scriptsRelease?: LoadedScriptsRelease }> {
  if (config.cls) checkStackExports(config.cls);
  return { scriptsRelease: config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined };
}
