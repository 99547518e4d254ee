/**
 * The files of this folder: the pipeline template, the common-schema SQL baseline and the per-client run tables. Each
 * carries its build number in its file name, and the folder holds exactly one of each kind: a new version is a renamed
 * file (see README).
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import {
  TEMPLATE_FILE_PREFIX,
  TEMPLATE_FILE_EXTENSION,
  BASELINE_NAME_PREFIX,
  CLIENT_RUN_TABLES_NAME_PREFIX,
} from "../core/naming";
import type { PipelineTemplate } from "../core/template";
import { UserError } from "../core/errors";

export const TEMPLATES_DIR = __dirname;

function findVersioned(dir: string, prefix: string, extension: string): { file: string; buildNumber: string } {
  const pattern = new RegExp(`^${prefix}(\\d+)${extension.replace(".", "\\.")}$`);
  const matches = fs.readdirSync(dir).filter((f) => pattern.test(f));
  if (matches.length !== 1) {
    throw new UserError(
      `${dir}: expected exactly one ${prefix}<BuildNumber>${extension}, found ${matches.length ? matches.join(", ") : "none"}`,
    );
  }
  return { file: path.join(dir, matches[0]), buildNumber: pattern.exec(matches[0])![1] };
}

export function loadPipelineTemplate(dir = path.join(TEMPLATES_DIR, "hub_hrsys_export")): PipelineTemplate {
  const { file, buildNumber } = findVersioned(dir, TEMPLATE_FILE_PREFIX, TEMPLATE_FILE_EXTENSION);
  return { fileName: path.basename(file), buildNumber, text: fs.readFileSync(file, "utf8") };
}

export interface SqlBaseline {
  /** Hub_Plat_Common_Schema_Baseline_<BuildNumber> or Hub_Client_Run_Tables_<BuildNumber> */
  name: string;
  buildNumber: string;
  /** The SQL with its tags (<STAGING_SCHEMA_ONLY_VALUE>, <CLIENT_NAME_VALUE>, ...) still in. */
  text: string;
  sha256: string;
}

function loadSql(dir: string, prefix: string): SqlBaseline {
  const { file, buildNumber } = findVersioned(dir, prefix, ".sql");
  const text = fs.readFileSync(file, "utf8");
  return {
    name: path.basename(file, ".sql"),
    buildNumber,
    text,
    sha256: crypto.createHash("sha256").update(text).digest("hex"),
  };
}

/** The common schema, Hub_Plat_Common_Schema_Baseline_<BuildNumber>.sql: the same for every client of an environment. */
export function loadSqlBaseline(dir = path.join(TEMPLATES_DIR, "sql")): SqlBaseline {
  return loadSql(dir, BASELINE_NAME_PREFIX);
}

/** A client's run tables, Hub_Client_Run_Tables_<BuildNumber>.sql: rendered with the client name. */
export function loadClientRunTables(dir = path.join(TEMPLATES_DIR, "sql")): SqlBaseline {
  return loadSql(dir, CLIENT_RUN_TABLES_NAME_PREFIX);
}

/** The SQL sources of the installation (core/installation.ts). */
export function loadSqlSources(dir = path.join(TEMPLATES_DIR, "sql")): {
  baseline: SqlBaseline;
  runTables: SqlBaseline;
} {
  return { baseline: loadSqlBaseline(dir), runTables: loadClientRunTables(dir) };
}
