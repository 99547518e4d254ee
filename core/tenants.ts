/**
 * Hub tenants and platform tenants (HUB_PLAT_CONFIG "specifies platform tenants and their corresponding hub
 * tenants"): each platform tenant, a platform region of the client, feeds one hub tenant; a hub tenant may be fed by
 * several. The config has been validated: every platform tenant names an existing hub tenant, every region in use has
 * a complete hub environment.
 */
import type { HubEnvironment, HubTenant, PlatTenant, StackConfig } from "./stackConfig";
import type { HubRegion } from "./regions";

export interface PlatTenantOfHub {
  plat: PlatTenant;
  hub: HubTenant;
}

/** Each platform tenant with the hub tenant it feeds, in config order. */
export function platTenantsWithHub(config: Pick<StackConfig, "hubTenants" | "platTenants">): PlatTenantOfHub[] {
  const byCode = new Map(config.hubTenants.map((t) => [t.hubTenantCode, t]));
  return config.platTenants.map((plat) => ({ plat, hub: byCode.get(plat.hubTenantCode)! }));
}

/** The hub environment of a region in use (name and API base URLs). */
export function hubEnvironment(config: Pick<StackConfig, "hub">, region: HubRegion): HubEnvironment {
  const env = config.hub.environments[region];
  if (!env) throw new Error(`hub region ${region} has no complete environment (the config was not validated)`);
  return env;
}
