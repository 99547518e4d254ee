/** Rows of the configuration tables HUB_API_CONFIG and HUB_PLAT_CONFIG (procedure steps 5.2 and 5.3). */
import type { StackConfig } from "../config/schema";
import { HUB_API_NAMES } from "./hubContract";
import { TABLES } from "./naming";

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
  [TABLES.platConfig]: ["plat_client_name", "hub_tenant_id"],
} as const;

/** One record per hub API per tenant. */
export function hubApiConfigRows(config: StackConfig): ConfigRow[] {
  return config.tenants.flatMap((tenant) =>
    HUB_API_NAMES.map((api) => ({
      table: TABLES.apiConfig,
      key: { hub_tenant_id: tenant.hubTenantId, hub_api_name: api },
      values: {
        hub_api_url: config.hub.apis[api],
        hub_environment_name: config.hub.environmentName,
        hub_region: tenant.hubRegion,
      },
    })),
  );
}

/** One record per tenant of the client; hub_destination is its region's queue connection. */
export function hubPlatConfigRows(config: StackConfig): ConfigRow[] {
  return config.tenants.map((tenant) => ({
    table: TABLES.platConfig,
    key: { plat_client_name: config.clientName, hub_tenant_id: tenant.hubTenantId },
    values: {
      plat_region: tenant.platRegion,
      codebase: tenant.codebase,
      gbl_or_us: tenant.gblOrUs,
      secure_view_source: tenant.secureViewSource,
      connector_id: tenant.connectorId,
      hub_destination: config.queues[tenant.hubRegion]!.connectionName,
      hub_tenant_code: tenant.hubTenantCode,
    },
  }));
}

/**
 * A stable name for a row, used as its resource name: `HUB_API_CONFIG/<tenant>/ERS`, `HUB_PLAT_CONFIG/<platRegion>`.
 * A HUB_PLAT_CONFIG row is named by its business key (plat_client_name, plat_region; unique in the table, and
 * plat_client_name is the stack's), not by its key: a new hubTenantId for a platform region is then a key change of
 * the same resource, which the row provider replaces deleting first, instead of a new resource created before the
 * old one is deleted (which the UNIQUE (plat_client_name, plat_region) constraint refuses).
 */
export function rowName(row: ConfigRow): string {
  if (row.table === TABLES.platConfig) return [row.table, row.values.plat_region].join("/");
  const keys = ROW_KEYS[row.table as keyof typeof ROW_KEYS] ?? Object.keys(row.key);
  return [row.table, ...keys.filter((k) => k !== "plat_client_name").map((k) => row.key[k])].join("/");
}
