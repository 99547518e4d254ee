/**
 * The content hash that triggers the image build and tags the image: every file the image is made of, from esbuild's
 * own list of the bundle's inputs (scripts/build-task.js bundleInputs), so a rebuild happens only when that changes.
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

// Per root, once per process: esbuild's walk of the task's imports takes a second, and `plan` runs the program twice.
const sourceFiles = new Map<string, string[]>();

/** The bundle's inputs (from esbuild's metafile) and the image build files, sorted. */
export function imageSourceFiles(root: string = PROJECT_ROOT): string[] {
  let files = sourceFiles.get(root);
  if (!files) {
    const { bundleInputs } = require(path.join(root, "scripts", "build-task.js")) as { bundleInputs: () => string[] };
    files = [...new Set([...bundleInputs(), ...IMAGE_BUILD_FILES])].sort();
    sourceFiles.set(root, files);
  }
  return [...files];
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

export function taskSourceHash(root: string = PROJECT_ROOT): string {
  return contentHash(root, imageSourceFiles(root));
}
