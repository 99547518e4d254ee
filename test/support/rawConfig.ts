/** A valid raw stack config (as the engine hands it over: secrets decrypted), for tests to break one field at a time. */
import type { HubRegion } from "../../core/regions";

export const TENANT_IDS: Record<HubRegion, string> = {
  US: "11111111-1111-4111-8111-111111111111",
  EU: "22222222-2222-4222-8222-222222222222",
  APAC: "33333333-3333-4333-8333-333333333333",
};

export function rawHubTenant(region: HubRegion, overrides: Record<string, unknown> = {}) {
  return {
    hubTenantId: TENANT_IDS[region],
    hubTenantCode: `ACME_${region}`,
    hubRegion: region,
    clientId: `acme-${region.toLowerCase()}`,
    clientSecret: `secret-${region.toLowerCase()}-Zx9`,
    ...overrides,
  };
}

/** The platform tenant of a hub region's hub tenant (platform region AP for APAC). */
export function rawPlatTenant(region: HubRegion, overrides: Record<string, unknown> = {}) {
  return {
    platRegion: region === "APAC" ? "AP" : region,
    codebase: region === "US" ? "US" : "GBL",
    gblOrUs: region === "US" ? "US" : "GBL",
    hubTenantCode: `ACME_${region}`,
    ...overrides,
  };
}

/** A hub region's environment: its name and API base URLs. */
export function rawHubEnvironment(region: HubRegion) {
  const host = `hub-ext-qa-${region.toLowerCase()}.example.com`;
  return {
    environmentName: `hub-qa-${region.toLowerCase()}`,
    apis: { ERS: `https://${host}/ers/api/`, CFG: `https://${host}/cfg/api/`, HRSYS: `https://${host}/hrsys/api/` },
  };
}

export function rawQueue(region: HubRegion) {
  return {
    connectionName: `HUB_MQ_${region}`,
    baseUrl: `https://mq-${region.toLowerCase()}.example.com`,
    queueName: `acme-empl-${region.toLowerCase()}`,
    clientAccessId: `mq-${region.toLowerCase()}-id`,
    clientSecret: `mq-${region.toLowerCase()}-secret`,
  };
}

// Loosely typed on purpose: tests break fields in ways the input type forbids.
export function rawConfig(regions: HubRegion[] = ["US", "EU"]): Record<string, any> {
  return {
    environment: "QA",
    clientName: "ACME",
    jobName: "HRSYS_EMPL_HUB_ACME_202611_QA",
    publishSchema: "PLATDB.publish",
    stagingSchema: "PLATDB.staging",
    bucket: { name: "acme-platform-qa", create: true, connectionName: "PLAT_S3" },
    database: {
      connectionName: "PLAT_WAREHOUSE",
      host: "db.example.com",
      port: 5432,
      database: "PLATDB",
      sslMode: "verify-full",
      caBundle: "certs/rds-global-bundle.pem",
      admin: { username: "platform_admin", password: "admin-pw" },
      task: { username: "hub_export_acme", password: "task-pw" },
    },
    connectionStore: { prefix: "acme/qa" },
    hub: { regions: Object.fromEntries(regions.map((r) => [r, rawHubEnvironment(r)])) },
    queues: Object.fromEntries(regions.map((r) => [r, rawQueue(r)])),
    hubTenants: regions.map((r) => rawHubTenant(r)),
    platTenants: regions.map((r) => rawPlatTenant(r)),
    schedule: { expression: "cron(0 3 * * ? *)" },
    network: { subnetIds: ["subnet-0123"], securityGroupIds: ["sg-0123"] },
  };
}
