/** The scripts folder's configuration files: credentials.ini and tenant_credentials.txt (procedure step 7). */
import { SCRIPT_FILES } from "../../core/naming";
import { UserError } from "../../core/errors";
import { CredentialsStringError, decodeCredentialsString, maskCredentialsString } from "../../core/credentials";
import { childLocation, readLocation } from "./location";

export interface ScriptFiles {
  /** credentials.ini [warehouse] warehouse_connection: the database connection name. */
  warehouseConnection: string;
  /**
   * tenant_credentials.txt: hub tenant id (lower case) → its entry, as the file has it. The file is shared with the
   * platform environment's other pipelines: only this client's entries are read and checked (credentialsStringOf).
   * Secret.
   */
  tenantCredentials: Map<string, unknown>;
}

export async function loadScriptFiles(folder: string): Promise<ScriptFiles> {
  const iniAt = childLocation(folder, SCRIPT_FILES.credentialsIni);
  const txtAt = childLocation(folder, SCRIPT_FILES.tenantCredentials);
  const [ini, txt] = await Promise.all([readLocation(iniAt), readLocation(txtAt)]);
  const missing = [ini === undefined ? iniAt : undefined, txt === undefined ? txtAt : undefined].filter(
    (x): x is string => !!x,
  );
  if (missing.length > 0) {
    throw new UserError([
      `missing credential file${missing.length > 1 ? "s" : ""} in the scripts folder ${folder}:`,
      ...missing.map((m) => `  ${m}`),
      `  (procedure step 7.2: copy ${SCRIPT_FILES.credentialsIniTemplate} and ${SCRIPT_FILES.tenantCredentialsTemplate}, then fill them in)`,
    ]);
  }
  return {
    warehouseConnection: parseCredentialsIni(ini!, iniAt),
    tenantCredentials: parseTenantCredentials(txt!, txtAt),
  };
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
  if (/^<.*>$/.test(value))
    throw new UserError(
      `${where}: warehouse_connection is still the template's ${value}: set the database connection name`,
    );
  return value;
}

/**
 * `{"<tenant id>": <entry>, ...}`: a JSON object, read whole. Its entries are not checked here: other tenants' entries
 * belong to other pipelines, in formats agreed with the service provider that this project need not know.
 */
export function parseTenantCredentials(
  text: string,
  where: string = SCRIPT_FILES.tenantCredentials,
): Map<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new UserError(`${where}: not valid JSON (expected {"<hub tenant id>": "<credentials string>", ...})`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    throw new UserError(`${where}: must be a JSON object of hub tenant id → credentials string`);
  return new Map(
    Object.entries(doc as Record<string, unknown>).map(([tenantId, value]) => [tenantId.toLowerCase(), value]),
  );
}

/**
 * One of this client's hub tenants' credentials string, checked: it must be there, a string, and decode. Errors name
 * the tenant, never a value.
 */
export function credentialsStringOf(
  entries: Map<string, unknown>,
  hubTenantId: string,
): { credentialsString: string } | { problem: string } {
  const value = entries.get(hubTenantId.toLowerCase());
  if (value === undefined) return { problem: "no credentials string in tenant_credentials.txt" };
  if (typeof value !== "string") return { problem: "its entry in tenant_credentials.txt must be a credentials string" };
  try {
    decodeCredentialsString(value);
  } catch (err) {
    if (!(err instanceof CredentialsStringError)) throw err;
    return { problem: `its credentials string in tenant_credentials.txt: ${err.message}` };
  }
  // From here on, every log line, stored reason and terminal output masks it (core/redact.ts).
  maskCredentialsString(value);
  return { credentialsString: value };
}

/** How many entries of tenant_credentials.txt are other tenants' (not in `own`): logged as a count, never read. */
export function otherEntries(entries: Map<string, unknown>, own: readonly string[]): number {
  const mine = new Set(own.map((id) => id.toLowerCase()));
  return [...entries.keys()].filter((id) => !mine.has(id)).length;
}
