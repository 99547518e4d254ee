/**
 * A copy of the project as a fresh clone has it: its tracked and new files (not ignored ones: no `.local/`, no
 * `.tmp/`), its stack files as the repository ships them (the tests' fixtures), whatever a team has put in the
 * checkout's own, committed in a repository of its own (so `plan` compares an edit with git HEAD's file, as in a
 * clone). Tests that follow the docs, or run from another folder, use it.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "./cli";
import { fixtureStackFile, type FixtureStack } from "../fixtures/stacks";

export interface CopyOptions {
  /**
   * link (default): one symlink to this checkout's; hardlink: a tree of its own (a module's real path is then in the
   * copy, as in a clone, for what records paths: the engine's TypeScript loader, the providers' serialization); none:
   * a clone before `npm ci`.
   */
  nodeModules?: "link" | "hardlink" | "none";
}

export function copyProject(root: string, options: CopyOptions = {}): string {
  const git = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"];
  const listed = execFileSync("git", git, { cwd: PROJECT_ROOT });
  for (const file of listed.toString("utf8").split("\0").filter(Boolean)) {
    // Deleted in the work tree, or a link such as a work tree's node_modules.
    const from = path.join(PROJECT_ROOT, file);
    if (!fs.existsSync(from) || !fs.lstatSync(from).isFile()) continue;
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.copyFileSync(from, path.join(root, file));
  }
  const modules = fs.realpathSync(path.join(PROJECT_ROOT, "node_modules"));
  if ((options.nodeModules ?? "link") === "link") fs.symlinkSync(modules, path.join(root, "node_modules"));
  else if (options.nodeModules === "hardlink") execFileSync("cp", ["-al", modules, path.join(root, "node_modules")]);
  for (const stack of ["qa", "prod"] as FixtureStack[]) {
    fs.copyFileSync(fixtureStackFile(stack), path.join(root, `Pulumi.${stack}.yaml`));
  }
  const identity = ["-c", "user.name=hub-export tests", "-c", "user.email=tests@hub-export.invalid"];
  execFileSync("git", ["init", "-q"], { cwd: root });
  execFileSync("git", ["add", "-A", "."], { cwd: root });
  execFileSync("git", [...identity, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "as shipped"], { cwd: root });
  return root;
}

/** Removes a copy, and the CLI bundle its commands built (in the shared node_modules/.cache, named after its path). */
export function removeProjectCopy(root: string): void {
  if (fs.existsSync(path.join(root, "scripts", "build-cli.js"))) {
    const { cacheDir } = require(path.join(root, "scripts", "build-cli.js")) as { cacheDir: () => string };
    fs.rmSync(cacheDir(), { recursive: true, force: true });
  }
  fs.rmSync(root, { recursive: true, force: true });
}
