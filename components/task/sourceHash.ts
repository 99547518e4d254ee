/**
 * The content hash that triggers the image build and tags the image: every file the image is made of, from esbuild's
 * own list of the bundle's inputs (scripts/build-task.js bundleInputs), so a rebuild happens only when that changes.
 * The list is kept with the hash it gave (node_modules/.cache/hub-export/): while the listed files hash the same, the
 * imports they make are the same, so the list still holds and no bundler runs (a plan costs a second less).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../../config/load";

/** Files that shape the image besides the bundle's inputs: how it is bundled and how the image is built. */
export const IMAGE_BUILD_FILES = [
  "scripts/build-task.js",
  "scripts/image-node.js",
  "task/Dockerfile",
  ".dockerignore",
] as const;

/** The bundle's inputs (from esbuild's metafile) and the image build files, sorted. */
export function imageSourceFiles(root: string = PROJECT_ROOT): string[] {
  const { bundleInputs } = require(path.join(root, "scripts", "build-task.js")) as { bundleInputs: () => string[] };
  return [...new Set([...bundleInputs(), ...IMAGE_BUILD_FILES])].sort();
}

/** sha256 over each file's path and content; a listed file that is missing counts as such. */
export function contentHash(root: string, files: readonly string[]): string {
  const hash = crypto.createHash("sha256");
  for (const file of [...files].sort()) {
    const absolute = path.join(root, file);
    hash.update(file).update("\0");
    hash.update(fs.existsSync(absolute) ? fs.readFileSync(absolute) : "(missing)").update("\0");
  }
  return hash.digest("hex");
}

interface ListedHash {
  files: string[];
  hash: string;
}

/** Where a checkout keeps its last list (node_modules may be shared by several checkouts). */
function listFile(root: string): string {
  const checkout = crypto.createHash("sha256").update(path.resolve(root)).digest("hex").slice(0, 12);
  return path.join(root, "node_modules", ".cache", "hub-export", `image-inputs-${checkout}.json`);
}

function readList(file: string): ListedHash | undefined {
  try {
    const listed = JSON.parse(fs.readFileSync(file, "utf8")) as ListedHash;
    return Array.isArray(listed.files) && typeof listed.hash === "string" ? listed : undefined;
  } catch {
    return undefined;
  }
}

export function taskSourceHash(root: string = PROJECT_ROOT): string {
  const file = listFile(root);
  const listed = readList(file);
  if (listed && contentHash(root, listed.files) === listed.hash) return listed.hash;
  const files = imageSourceFiles(root);
  const hash = contentHash(root, files);
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}`;
    fs.writeFileSync(temporary, JSON.stringify({ files, hash } satisfies ListedHash));
    fs.renameSync(temporary, file);
  } catch {
    // A read-only install lists the inputs on every call.
  }
  return hash;
}
