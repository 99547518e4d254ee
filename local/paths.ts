/** Where the embedded default keeps its state: `.local/` in the project (ignored by git). */
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../config/load";
import { UserError } from "../core/errors";
import { makeFolder, PRIVATE_FOLDER_MODE } from "../providers/folders";

export interface LocalPaths {
  root: string;
  postgres: string;
  /** Stands in for the S3 bucket: object keys are paths under it. */
  bucket: string;
  /** The connection-strings entity collection: one JSON file per record. */
  connections: string;
  secrets: string;
  logs: string;
}

export function localPaths(root = path.join(PROJECT_ROOT, ".local")): LocalPaths {
  return {
    root,
    postgres: path.join(root, "postgres"),
    bucket: path.join(root, "bucket"),
    connections: path.join(root, "connections"),
    secrets: path.join(root, "secrets.json"),
    logs: path.join(root, "logs"),
  };
}

/**
 * The state folder and the folders in it that hold secrets (connections/, logs/), made ours alone before a start
 * writes in them: another user who can write one could swap a connection record, or plant a link where a file is
 * written. A missing one is created 0700; one that others can write is tightened to 0700, and `notify` says so; one
 * that is not ours is refused with the command that makes it ours.
 */
export function ownStateFolders(paths: LocalPaths, notify: (line: string) => void): void {
  makeFolder(paths.root, PRIVATE_FOLDER_MODE);
  const uid = process.geteuid?.();
  for (const dir of [paths.root, paths.connections, paths.logs]) {
    if (!fs.existsSync(dir)) continue;
    const st = fs.statSync(dir);
    const shown = path.relative(process.cwd(), dir) || dir;
    if (!st.isDirectory()) throw new UserError(`${shown} is not a folder: move it away, or give another --dir`);
    if (uid !== undefined && st.uid !== uid)
      throw new UserError(
        `${shown} belongs to another user (uid ${st.uid}) and holds secrets: make it yours (sudo chown -R ${uid} '${dir.replace(/'/g, "'\\''")}') or give another --dir`,
      );
    if (st.mode & 0o022) {
      fs.chmodSync(dir, PRIVATE_FOLDER_MODE);
      notify(`${shown} could be written by other users and holds secrets: it is yours alone now (mode 0700)`);
    }
  }
  makeFolder(paths.logs, PRIVATE_FOLDER_MODE);
}
