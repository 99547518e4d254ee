/**
 * A copy of the project as a fresh clone has it: its tracked and new files (not ignored ones: no `.local/`, no
 * `.tmp/`), node_modules linked, and its stack files as the repository ships them (the tests' fixtures), whatever a
 * team has put in the checkout's own, committed in a repository of its own (so `plan` compares an edit with git HEAD's
 * file, as in a clone). Tests that follow the docs run their commands there.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "./cli";
import { fixtureStackFile, type FixtureStack } from "../fixtures/stacks";

export function copyProject(root: string): string {
  const git = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"];
  const listed = execFileSync("git", git, { cwd: PROJECT_ROOT });
  for (const file of listed.toString("utf8").split("\0").filter(Boolean)) {
    // Deleted in the work tree, or a link such as a work tree's node_modules.
    const from = path.join(PROJECT_ROOT, file);
    if (!fs.existsSync(from) || !fs.lstatSync(from).isFile()) continue;
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.copyFileSync(from, path.join(root, file));
  }
  fs.symlinkSync(fs.realpathSync(path.join(PROJECT_ROOT, "node_modules")), path.join(root, "node_modules"));
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
