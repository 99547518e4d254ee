/** The scripts folder's configuration files: credentials.ini and tenant_credentials.txt (procedure step 7). */
import { SCRIPT_FILES } from "../../core/naming";
import { UserError } from "../../core/errors";
import { CredentialsStringError, decodeCredentialsString, maskCredentialsString } from "../../core/credentials";
import { childLocation, readLocation } from "./location";

export interface ScriptFiles {
  /** credentials.ini [warehouse] warehouse_connection: the database connection name. */
  warehouseConnection: string;
  /** Hub tenant id (lower case) → credentials string. Secret. */
  tenantCredentials: Map<string, string>;
}

export async function loadScriptFiles(folder: string): Promise<ScriptFiles> {
  const iniAt = childLocation(folder, SCRIPT_FILES.credentialsIni);
  const txtAt = childLocation(folder, SCRIPT_FILES.tenantCredentials);
  const [ini, txt] = await Promise.all([readLocation(iniAt), readLocation(txtAt)]);
  const missing = [ini === undefined ? iniAt : undefined, txt === undefined ? txtAt : undefined].filter((x): x is string => !!x);
  if (missing.length > 0) {
    throw new UserError([
      `missing credential file${missing.length > 1 ? "s" : ""} in the scripts folder ${folder}:`,
      ...missing.map((m) => `  ${m}`),
      `  (procedure step 7.2: copy ${SCRIPT_FILES.credentialsIniTemplate} and ${SCRIPT_FILES.tenantCredentialsTemplate}, then fill them in)`,
    ]);
  }
  return { warehouseConnection: parseCredentialsIni(ini!, iniAt), tenantCredentials: parseTenantCredentials(txt!, txtAt) };
}

/** `[warehouse]` / `warehouse_connection = NAME` (ini: `=` or `:`, `;`/`#` comments, case-insensitive keys). */
export function parseCredentialsIni(text: string, where: string = SCRIPT_FILES.credentialsIni): string {
  let section = "";
  let value: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith(";") || line.startsWith("#")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1].trim().toLowerCase();
      continue;
    }
    const m = /^([^=:]+)[=:](.*)$/.exec(line);
    if (m && section === "warehouse" && m[1].trim().toLowerCase() === "warehouse_connection") value = m[2].trim();
  }
  if (!value) throw new UserError(`${where}: no warehouse_connection in section [warehouse]`);
  if (/^<.*>$/.test(value)) throw new UserError(`${where}: warehouse_connection is still the template's ${value}: set the database connection name`);
  return value;
}

/** `{"<tenant id>": "<credentials string>", ...}`; every string must decode. Errors never quote a value. */
export function parseTenantCredentials(text: string, where: string = SCRIPT_FILES.tenantCredentials): Map<string, string> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new UserError(`${where}: not valid JSON (expected {"<hub tenant id>": "<credentials string>", ...})`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw new UserError(`${where}: must be a JSON object of hub tenant id → credentials string`);
  const out = new Map<string, string>();
  const problems: string[] = [];
  for (const [tenantId, value] of Object.entries(doc as Record<string, unknown>)) {
    if (typeof value !== "string") {
      problems.push(`tenant ${tenantId}: the credentials string must be a string`);
      continue;
    }
    try {
      decodeCredentialsString(value);
      maskCredentialsString(value);
    } catch (err) {
      if (!(err instanceof CredentialsStringError)) throw err;
      problems.push(`tenant ${tenantId}: ${err.message}`);
      continue;
    }
    out.set(tenantId.toLowerCase(), value);
  }
  if (problems.length > 0) throw new UserError([`${where}: invalid`, ...problems.map((p) => `  ${p}`)]);
  return out;
}
