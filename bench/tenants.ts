/**
 * Stacks of many tenants for the plan benchmark (and the tests that grow a stack): numbered hub tenants and their
 * platform tenants, deterministic, spread over the three regions.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { HUB_REGIONS, type HubRegion } from "../core/regions";

export interface HubTenantFixture {
  hubTenantId: string;
  hubTenantCode: string;
  hubRegion: HubRegion;
  clientId: string;
  clientSecret: string | { secure: string };
}

export interface PlatTenantFixture {
  platRegion: string;
  codebase: string;
  gblOrUs: string;
  hubTenantCode: string;
}

/** Hub tenant number `n` (from 1): a deterministic UUID and code, in the given hub region. */
export function hubTenantFixture(
  n: number,
  hubRegion: HubRegion,
  clientSecret: HubTenantFixture["clientSecret"] = `tenant-secret-${n}`,
): HubTenantFixture {
  return {
    hubTenantId: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    hubTenantCode: `ACME_T${String(n).padStart(4, "0")}`,
    hubRegion,
    clientId: `acme-t${n}-hrsys`,
    clientSecret,
  };
}

/** The platform tenant of hub tenant `n`: a region code of its own (PAAAB, ...). */
export function platTenantFixture(n: number, hub: HubTenantFixture): PlatTenantFixture {
  let platRegion = "";
  for (let i = n, k = 0; k < 4; k++, i = Math.floor(i / 26))
    platRegion = String.fromCharCode(65 + (i % 26)) + platRegion;
  const us = hub.hubRegion === "US";
  return {
    platRegion: `P${platRegion}`,
    codebase: us ? "US" : "GBL",
    gblOrUs: us ? "US" : "GBL",
    hubTenantCode: hub.hubTenantCode,
  };
}

/**
 * Writes `Pulumi.prod-tenants<N>.yaml` to `dir`: the prod stack file `base` with `tenants` tenants spread over the three
 * regions. Their secrets are `secure:` stand-ins, as in a real stack file.
 */
export function writeTenantStackFile(base: string, dir: string, tenants: number): string {
  const doc = YAML.parse(fs.readFileSync(base, "utf8")) as { config: Record<string, unknown> };
  const hubs = Array.from({ length: tenants }, (_, i) =>
    hubTenantFixture(i + 1, HUB_REGIONS[i % HUB_REGIONS.length], { secure: `v1:fixture:${i + 1}` }),
  );
  doc.config["hubExport:hubTenants"] = hubs;
  doc.config["hubExport:platTenants"] = hubs.map((hub, i) => platTenantFixture(i + 1, hub));
  const file = path.join(dir, `Pulumi.prod-tenants${tenants}.yaml`);
  fs.writeFileSync(file, YAML.stringify(doc));
  return file;
}
