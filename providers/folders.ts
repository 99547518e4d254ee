/**
 * Folders with the mode we mean, whatever the umask: for the dynamic providers (a folder standing in for the bucket)
 * and local mode. Serialized provider code: providers/README.md.
 */

/** Folders that hold state or credentials (the embedded default's .local/, its bucket and connections): the owner's only. */
export const PRIVATE_FOLDER_MODE = 0o700;

/**
 * Creates `dir` and its missing parents, each with `mode` exactly: mkdir's mode is masked by the umask (and a
 * `umask 000` leaves a folder created without one world-writable), so every folder created is chmod-ed after. A
 * folder that existed keeps its mode: its owner chose it.
 */
export function makeFolder(dir: string, mode: number): void {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const first = fs.mkdirSync(dir, { recursive: true, mode });
  if (first === undefined) return;
  const top = path.resolve(first);
  for (let folder = path.resolve(dir); ; folder = path.dirname(folder)) {
    fs.chmodSync(folder, mode);
    if (folder === top || folder === path.dirname(folder)) return;
  }
}
