/** The scripts folder's configuration files (procedure step 7). */
import type { StackConfig } from "../config/schema";
import { encodeCredentialsString } from "./credentials";

/** credentials.ini: section [warehouse], key warehouse_connection = the database connection name. */
export function credentialsIni(config: Pick<StackConfig, "database">): string {
  return `[warehouse]\nwarehouse_connection = ${config.database.connectionName}\n`;
}

/** tenant_credentials.txt: {"<tenant id>": "<credentials string>", ...}. Its content is secret. */
export function tenantCredentialsTxt(config: Pick<StackConfig, "hubTenants">): string {
  const map: Record<string, string> = {};
  for (const t of config.hubTenants) {
    map[t.hubTenantId] = encodeCredentialsString({ clientId: t.clientId, clientSecret: t.clientSecret.reveal(`tenant ${t.hubTenantId} clientSecret`) });
  }
  return JSON.stringify(map, null, 2) + "\n";
}

/** The shipped templates copied when the real files are absent (procedure step 7.2). */
export const CREDENTIALS_INI_TEMPLATE = "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n";
export const TENANT_CREDENTIALS_TEMPLATE = '{\n  "<hub tenant id>": "<CREDENTIALS_STRING>"\n}\n';
