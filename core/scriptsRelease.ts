/**
 * A vendor scripts release (procedure step 7.1): `hub_python_scripts.zip`, unzipped into /Tools/hub_python_scripts
 * keeping its folder structure. Read with yauzl (entry by entry, names checked before anything is written): an entry
 * with an absolute path, a drive letter, a backslash or a `..` segment is refused (zip-slip), as is a symbolic link.
 * credentials.ini and tenant_credentials.txt are never taken from a release: they are the platform's (step 7.2 to 7.4).
 */
import { UserError } from "./errors";
import { SCRIPT_FILES } from "./naming";

export interface ReleaseFile {
  /** Path inside the scripts folder, `/`-separated. */
  name: string;
  content: Buffer;
}

export interface ScriptsRelease {
  files: ReleaseFile[];
  /** Entries left out because the platform owns them (credentials.ini, tenant_credentials.txt). */
  skipped: string[];
}

/** Files of the folder a release never replaces. */
export const PROTECTED_SCRIPT_FILES: readonly string[] = [SCRIPT_FILES.credentialsIni, SCRIPT_FILES.tenantCredentials];
/** The release's top folder, when it has one, is the scripts folder itself. */
const TOP_FOLDER = "hub_python_scripts/";
const MAX_BYTES = 64 * 1024 * 1024;

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
  const yauzl = await import("yauzl");
  const entries = await new Promise<{ name: string; content: Buffer }[]>((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true, decodeStrings: false, validateEntrySizes: true }, (err, file) => {
      if (err || !file) return reject(new UserError(`${source}: not a readable zip file (${err?.message ?? "no entries"})`));
      const out: { name: string; content: Buffer }[] = [];
      let total = 0;
      const fail = (e: Error) => {
        file.close();
        reject(e);
      };
      file.on("error", (e: Error) => fail(e instanceof UserError ? e : new UserError(`${source}: ${e.message}`)));
      file.on("end", () => resolve(out));
      file.on("entry", (entry: import("yauzl").Entry) => {
        // Names are decoded and checked here, with our own message (bit 11: UTF-8; else CP437, read as latin1).
        const raw = entry.fileName as unknown as Buffer;
        const fileName = raw.toString((entry.generalPurposeBitFlag & 0x800) !== 0 ? "utf8" : "latin1");
        const problem = unsafeEntryName(fileName);
        if (problem) return fail(new UserError(`${source}: entry '${fileName}' ${problem}: refused, it would be written outside /Tools/hub_python_scripts (nothing was written)`));
        // Unix mode in the high 16 bits: a symbolic link could point anywhere.
        if (((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000) return fail(new UserError(`${source}: entry '${fileName}' is a symbolic link: refused (nothing was written)`));
        if (fileName.endsWith("/")) return file.readEntry();
        total += entry.uncompressedSize;
        if (total > MAX_BYTES) return fail(new UserError(`${source}: more than ${MAX_BYTES} bytes uncompressed: refused`));
        file.openReadStream(entry, (e, stream) => {
          if (e || !stream) return fail(new UserError(`${source}: entry '${fileName}': ${e?.message ?? "unreadable"}`));
          const chunks: Buffer[] = [];
          stream.on("data", (c: Buffer) => chunks.push(c));
          stream.on("error", (se: Error) => fail(new UserError(`${source}: entry '${fileName}': ${se.message}`)));
          stream.on("end", () => {
            out.push({ name: fileName, content: Buffer.concat(chunks) });
            file.readEntry();
          });
        });
      });
      file.readEntry();
    });
  });
  const strip = entries.length > 0 && entries.every((e) => e.name.startsWith(TOP_FOLDER)) ? TOP_FOLDER.length : 0;
  const files: ReleaseFile[] = [];
  const skipped: string[] = [];
  for (const e of entries) {
    const name = e.name.slice(strip);
    if (name === "") continue;
    if (PROTECTED_SCRIPT_FILES.includes(name)) skipped.push(name);
    else files.push({ name, content: e.content });
  }
  if (files.length === 0) throw new UserError(`${source}: holds no script file`);
  return { files: files.sort((a, b) => a.name.localeCompare(b.name)), skipped };
}
