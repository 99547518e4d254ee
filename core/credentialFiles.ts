/**
 * The scripts folder's configuration files (procedure step 7). The folder is shared by every hub pipeline of the
 * platform environment: a stack contributes its database connection name and its hub tenants' entries, merged into
 * the files by providers/scriptFiles.ts, never the files whole.
 */
import type { StackConfig } from "./stackConfig";
import { encodeCredentialsString } from "./credentials";
import { Secret } from "./secret";

/** What this stack puts in the shared files. */
export interface ScriptFileEntries {
  /** credentials.ini [warehouse] warehouse_connection: the database connection name. */
  warehouseConnection: string;
  /** tenant_credentials.txt entries, `{"<hub tenant id>": "<credentials string>"}` as JSON text. Secret. */
  tenantCredentials: Secret;
}

export function scriptFileEntries(config: Pick<StackConfig, "database" | "hubTenants">): ScriptFileEntries {
  const map: Record<string, string> = {};
  for (const t of config.hubTenants) {
    map[t.hubTenantId] = encodeCredentialsString({
      clientId: t.clientId,
      clientSecret: t.clientSecret.reveal(`hub tenant ${t.hubTenantId} clientSecret`),
    });
  }
  return { warehouseConnection: config.database.connectionName, tenantCredentials: Secret.plain(JSON.stringify(map)) };
}

/** The shipped templates, uploaded to the folder; the real files are created from them when absent (step 7.2). */
export const CREDENTIALS_INI_TEMPLATE = "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n";
export const TENANT_CREDENTIALS_TEMPLATE = '{\n  "<hub tenant id>": "<CREDENTIALS_STRING>"\n}\n';
