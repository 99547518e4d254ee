/** Rows of the configuration tables HUB_API_CONFIG and HUB_PLAT_CONFIG (procedure steps 5.2 and 5.3). */
import type { StackConfig } from "./stackConfig";
import { HUB_API_NAMES } from "./hubContract";
import { TABLES } from "./naming";
import { hubEnvironment, platTenantsWithHub } from "./tenants";

export type SqlValue = string | null;

/** A row of a config table, split into the key that identifies it and the rest. */
export interface ConfigRow {
  table: string;
  key: Record<string, string>;
  values: Record<string, SqlValue>;
}

/** Key columns per table: a key change replaces the row, any other change updates it in place. */
export const ROW_KEYS = {
  [TABLES.apiConfig]: ["hub_tenant_id", "hub_api_name"],
  [TABLES.platConfig]: ["plat_client_name", "plat_region"],
} as const;

/** One record per hub API per hub tenant, with the values of the tenant's own hub region. */
export function hubApiConfigRows(config: StackConfig): ConfigRow[] {
  return config.hubTenants.flatMap((tenant) => {
    const env = hubEnvironment(config, tenant.hubRegion);
    return HUB_API_NAMES.map((api) => ({
      table: TABLES.apiConfig,
      key: { hub_tenant_id: tenant.hubTenantId, hub_api_name: api },
      values: {
        hub_api_url: env.apis[api],
        hub_environment_name: env.environmentName,
        hub_region: tenant.hubRegion,
      },
    }));
  });
}

/**
 * One record per platform tenant of the client (unique per plat_client_name and plat_region), carrying the hub tenant
 * it feeds; hub_destination is the hub tenant's region's queue connection.
 */
export function hubPlatConfigRows(config: StackConfig): ConfigRow[] {
  return platTenantsWithHub(config).map(({ plat, hub }) => ({
    table: TABLES.platConfig,
    key: { plat_client_name: config.clientName, plat_region: plat.platRegion },
    values: {
      codebase: plat.codebase,
      gbl_or_us: plat.gblOrUs,
      secure_view_source: plat.secureViewSource,
      connector_id: plat.connectorId,
      hub_destination: config.queues[hub.hubRegion]!.connectionName,
      hub_tenant_code: hub.hubTenantCode,
      hub_tenant_id: hub.hubTenantId,
    },
  }));
}

/**
 * A stable name for a row, used as its resource name: `HUB_API_CONFIG/<tenant>/ERS`, `HUB_PLAT_CONFIG/<platRegion>`
 * (plat_client_name is the stack's). Re-pointing a platform tenant at another hub tenant is an update in place.
 */
export function rowName(row: ConfigRow): string {
  const keys = ROW_KEYS[row.table as keyof typeof ROW_KEYS] ?? Object.keys(row.key);
  return [row.table, ...keys.filter((k) => k !== "plat_client_name").map((k) => row.key[k])].join("/");
}
