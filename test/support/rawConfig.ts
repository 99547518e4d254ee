/** A valid raw stack config (as the engine hands it over: secrets decrypted), for tests to break one field at a time. */
import type { HubRegion } from "../../core/regions";

export const TENANT_IDS: Record<HubRegion, string> = {
  US: "11111111-1111-4111-8111-111111111111",
  EU: "22222222-2222-4222-8222-222222222222",
  APAC: "33333333-3333-4333-8333-333333333333",
};

export function rawTenant(region: HubRegion, overrides: Record<string, unknown> = {}) {
  return {
    hubTenantId: TENANT_IDS[region],
    hubTenantCode: `ACME_${region}`,
    hubRegion: region,
    platRegion: region === "APAC" ? "AP" : region,
    codebase: region === "US" ? "US" : "GBL",
    gblOrUs: region === "US" ? "US" : "GBL",
    clientId: `acme-${region.toLowerCase()}`,
    clientSecret: `secret-${region.toLowerCase()}-Zx9`,
    ...overrides,
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
      task: { username: "hub_export", password: "task-pw" },
    },
    connectionStore: { prefix: "acme/qa" },
    hub: {
      environmentName: "hub-qa",
      apis: {
        ERS: "https://hub-ext-qa.example.com/ers/api/",
        CFG: "https://hub-ext-qa.example.com/cfg/api/",
        HRSYS: "https://hub-ext-qa.example.com/hrsys/api/",
      },
    },
    queues: Object.fromEntries(regions.map((r) => [r, rawQueue(r)])),
    tenants: regions.map((r) => rawTenant(r)),
    schedule: { expression: "cron(0 3 * * ? *)" },
    network: { subnetIds: ["subnet-0123"], securityGroupIds: ["sg-0123"] },
  };
}
