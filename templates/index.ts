/**
 * The files of this folder: the pipeline template and the common-schema SQL baseline. Each carries its build number
 * in its file name, and the folder holds exactly one of each: a new version is a renamed file (see README).
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { TEMPLATE_FILE_PREFIX, TEMPLATE_FILE_EXTENSION, BASELINE_NAME_PREFIX } from "../core/naming";
import type { PipelineTemplate } from "../core/template";
import { UserError } from "../core/errors";

export const TEMPLATES_DIR = __dirname;

function findVersioned(dir: string, prefix: string, extension: string): { file: string; buildNumber: string } {
  const pattern = new RegExp(`^${prefix}(\\d+)${extension.replace(".", "\\.")}$`);
  const matches = fs.readdirSync(dir).filter((f) => pattern.test(f));
  if (matches.length !== 1) {
    throw new UserError(`${dir}: expected exactly one ${prefix}<BuildNumber>${extension}, found ${matches.length ? matches.join(", ") : "none"}`);
  }
  return { file: path.join(dir, matches[0]), buildNumber: pattern.exec(matches[0])![1] };
}

export function loadPipelineTemplate(dir = path.join(TEMPLATES_DIR, "hub_hrsys_export")): PipelineTemplate {
  const { file, buildNumber } = findVersioned(dir, TEMPLATE_FILE_PREFIX, TEMPLATE_FILE_EXTENSION);
  return { fileName: path.basename(file), buildNumber, text: fs.readFileSync(file, "utf8") };
}

export interface SqlBaseline {
  /** Hub_Plat_Common_Schema_Baseline_<BuildNumber> */
  name: string;
  buildNumber: string;
  /** The SQL with its tags (<STAGING_SCHEMA_ONLY_VALUE>, <CLIENT_NAME_VALUE>, ...) still in. */
  text: string;
  sha256: string;
}

export function loadSqlBaseline(dir = path.join(TEMPLATES_DIR, "sql")): SqlBaseline {
  const { file, buildNumber } = findVersioned(dir, BASELINE_NAME_PREFIX, ".sql");
  const text = fs.readFileSync(file, "utf8");
  return { name: path.basename(file, ".sql"), buildNumber, text, sha256: crypto.createHash("sha256").update(text).digest("hex") };
}
