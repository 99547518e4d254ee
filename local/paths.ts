/** Where the embedded default keeps its state: `.local/` in the project (ignored by git). */
import path from "node:path";
import { PROJECT_ROOT } from "../config/load";

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
