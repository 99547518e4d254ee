/**
 * A vendor scripts release (procedure step 7.1) as read from its zip: `hub_python_scripts.zip` checked entry by entry
 * (zip-slip, links, size, duplicates) before anything is written. Read by config/load.ts when the program plans, and
 * again by the dynamic provider when it applies (providers/scriptsRelease.ts): so `require()` inside, as serialized
 * provider code needs (providers/README.md).
 */
import * as naming from "./naming";

const { SCRIPT_FILES } = naming;

export interface ReleaseFile {
  /** Path inside the scripts folder, `/`-separated. */
  name: string;
  content: Buffer;
}

export interface ScriptsRelease {
  files: ReleaseFile[];
  /** Entries left out because the platform owns them (credentials.ini, tenant_credentials.txt). */
  skipped: string[];
  /** sha256 of the zip file. */
  sha256: string;
}

/** Files of the folder a release never replaces nor deletes. */
export const PROTECTED_SCRIPT_FILES: readonly string[] = [SCRIPT_FILES.credentialsIni, SCRIPT_FILES.tenantCredentials];
/** The release's top folder, when it has one, is the scripts folder itself. */
const TOP_FOLDER = "hub_python_scripts/";
const MAX_BYTES = 64 * 1024 * 1024;

/** An error in the release itself (the CLI and the program show it as one line, config/load.ts). */
export function releaseError(message: string): Error {
  const error = new Error(message);
  error.name = "ScriptsReleaseError";
  return error;
}

export function isScriptsReleaseError(err: unknown): boolean {
  return err instanceof Error && err.name === "ScriptsReleaseError";
}

/** Why an entry name would write outside the folder, or undefined when it is safe. */
export function unsafeEntryName(name: string): string | undefined {
  if (name.includes("\\")) return "holds a backslash";
  if (name.startsWith("/")) return "is an absolute path";
  if (/^[A-Za-z]:/.test(name)) return "starts with a drive letter";
  if (name.split("/").some((part) => part === "..")) return "has a '..' segment";
  if (name.includes("\0")) return "holds a NUL character";
  return undefined;
}

export async function readScriptsRelease(zip: Buffer, source: string): Promise<ScriptsRelease> {
  const yauzl = require("yauzl") as typeof import("yauzl");
  const { buffer } = require("node:stream/consumers") as typeof import("node:stream/consumers");
  const options = { lazyEntries: true, decodeStrings: false, validateEntrySizes: true };
  const file = await yauzl.fromBufferPromise(zip, options).catch((err: Error) => {
    throw releaseError(`${source}: not a readable zip file (${err.message})`);
  });
  const entries: { name: string; content: Buffer }[] = [];
  let total = 0;
  try {
    for await (const entry of file.eachEntry()) {
      // Names are decoded and checked here, with our own message (bit 11: UTF-8; else CP437, read as latin1).
      const raw = entry.fileName as unknown as Buffer;
      const fileName = raw.toString((entry.generalPurposeBitFlag & 0x800) !== 0 ? "utf8" : "latin1");
      const problem = unsafeEntryName(fileName);
      if (problem)
        throw releaseError(
          `${source}: entry '${fileName}' ${problem}: refused, it would be written outside /Tools/hub_python_scripts (nothing was written)`,
        );
      // Unix mode in the high 16 bits: a symbolic link could point anywhere.
      if (((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000)
        throw releaseError(`${source}: entry '${fileName}' is a symbolic link: refused (nothing was written)`);
      if (fileName.endsWith("/")) continue;
      total += entry.uncompressedSize;
      if (total > MAX_BYTES) throw releaseError(`${source}: more than ${MAX_BYTES} bytes uncompressed: refused`);
      try {
        entries.push({ name: fileName, content: await buffer(await file.openReadStreamPromise(entry)) });
      } catch (err) {
        throw releaseError(`${source}: entry '${fileName}': ${(err as Error).message}`);
      }
    }
  } catch (err) {
    throw isScriptsReleaseError(err) ? err : releaseError(`${source}: ${(err as Error).message}`);
  } finally {
    file.close();
  }
  const strip = entries.length > 0 && entries.every((e) => e.name.startsWith(TOP_FOLDER)) ? TOP_FOLDER.length : 0;
  const files: ReleaseFile[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    const name = e.name.slice(strip);
    if (name === "") continue;
    // Which copy would win depends on the order files are written: refused rather than guessed.
    if (seen.has(name)) throw releaseError(`${source}: entry '${e.name}' appears twice: refused (nothing was written)`);
    seen.add(name);
    if (PROTECTED_SCRIPT_FILES.includes(name)) skipped.push(name);
    else files.push({ name, content: e.content });
  }
  if (files.length === 0) throw releaseError(`${source}: holds no script file`);
  return { files: files.sort((a, b) => a.name.localeCompare(b.name)), skipped, sha256: sha256Of(zip) };
}

function sha256Of(data: Buffer): string {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(data).digest("hex");
}
