/**
 * The files a stack's config names, read and checked before anything is declared: the CLS load sheets built from
 * `hubExport:cls.exports` and the vendor scripts release of `hubExport:scriptsRelease.zip`. The program
 * (components/program.ts), `hub-export validate` and `hub-export plan` read them with this one function, so that
 * what one accepts the others accept too; a problem is a UserError naming the key.
 */
import type { StackConfig } from "./schema";
import { loadScriptsRelease, type LoadedScriptsRelease } from "./load";
import { buildStackSheets, type ClsSheetFiles } from "./clsSheets";

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
