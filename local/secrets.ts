/** Secrets of the embedded default: generated on first start, kept in .local/secrets.json (mode 0600). */
import fs from "node:fs";
import crypto from "node:crypto";
import path from "node:path";
import { writeAtomic } from "./stores";
import { UserError } from "../core/errors";
import { makeFolder, PRIVATE_FOLDER_MODE } from "../providers/folders";

export interface LocalSecrets {
  /** The admin login's (hubExport:database.admin), which the embedded server's superuser creates as a DBA would. */
  adminPassword: string;
  taskPassword: string;
  /** Queue client secret per region. */
  queues: Record<string, string>;
  /** Tenant client secret per hub tenant id. */
  tenants: Record<string, string>;
}

const generate = () => crypto.randomBytes(24).toString("base64url");

/** The secrets a file holds; one that is not ours to read (edited by hand, another tool's) is named. */
function readSecrets(file: string): Partial<LocalSecrets> {
  try {
    const doc = JSON.parse(fs.readFileSync(file, "utf8")) as unknown;
    if (doc && typeof doc === "object" && !Array.isArray(doc)) return doc;
  } catch {
    // said below
  }
  throw new UserError(
    `${file} is not the JSON object of the local secrets (edited by hand?): correct it, or remove it and 'npm start' generates new ones`,
  );
}

/** Loads the file, adding a secret for every region and tenant that has none yet. */
export function localSecrets(file: string, regions: string[], tenantIds: string[]): LocalSecrets {
  let secrets: LocalSecrets = { adminPassword: generate(), taskPassword: generate(), queues: {}, tenants: {} };
  if (fs.existsSync(file)) secrets = { ...secrets, ...readSecrets(file) };
  for (const r of regions) secrets.queues[r] ??= generate();
  for (const t of tenantIds) secrets.tenants[t] ??= generate();
  makeFolder(path.dirname(file), PRIVATE_FOLDER_MODE);
  // 0600 whatever mode an existing file had.
  writeAtomic(file, JSON.stringify(secrets, null, 2) + "\n", 0o600);
  return secrets;
}
