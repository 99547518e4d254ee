/**
 * The content hash that triggers the image build: every file the task bundle and its image are made of. The hash is
 * also the image tag, so a tag names exactly one content and a rebuild happens only when that content changes.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../../config/load";

/**
 * What the image is built from: the task (with its Dockerfile), the project modules it bundles, the bundle script
 * and the lock file that pins what gets bundled.
 */
export const TASK_IMAGE_SOURCES = ["task", "core", "config", "cls", "cli/command.ts", "cli/commands/run.ts", "scripts/build-task.js", "package-lock.json"] as const;

const SKIPPED_DIRECTORIES = new Set(["node_modules", "dist", ".local", "coverage", ".git"]);
const SKIPPED_FILE = /\.(test|spec)\.[cm]?[jt]s$|(^|\/)\.DS_Store$/;

/** Files under `sources` (relative to `root`), sorted, as forward-slash paths. Missing sources are skipped. */
export function listSourceFiles(root: string = PROJECT_ROOT, sources: readonly string[] = TASK_IMAGE_SOURCES): string[] {
  const files: string[] = [];
  const walk = (relative: string) => {
    const absolute = path.join(root, relative);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(absolute);
    } catch {
      return;
    }
    if (stat.isDirectory()) {
      for (const entry of fs.readdirSync(absolute)) if (!SKIPPED_DIRECTORIES.has(entry)) walk(path.posix.join(relative, entry));
    } else if (stat.isFile() && !SKIPPED_FILE.test(relative)) {
      files.push(relative);
    }
  };
  for (const source of sources) walk(source);
  return [...new Set(files)].sort();
}

/** sha256 over each file's path and content. */
export function taskSourceHash(root: string = PROJECT_ROOT, sources: readonly string[] = TASK_IMAGE_SOURCES): string {
  const hash = crypto.createHash("sha256");
  for (const file of listSourceFiles(root, sources)) {
    hash.update(file).update("\0").update(fs.readFileSync(path.join(root, file))).update("\0");
  }
  return hash.digest("hex");
}
