/**
 * The embedded default's changes to a stack config: loopback hub and queue URLs (said explicitly with
 * allowLoopback), the embedded database, and generated local secrets in place of the stack's ciphertext.
 */
import type { HubRegion } from "../core/regions";
import type { LocalSecrets } from "./secrets";
import { SAMPLE_LOADER_ROLE } from "../task/model/sampleData";

export interface LocalEndpoints {
  database: { host: string; port: number };
  hubApis: { ERS: string; CFG: string; HRSYS: string };
  queues: Record<HubRegion, string>;
}

type Raw = Record<string, unknown>;

/** The parts of a stack file's hubExport: values this changes, as read (validated afterwards, with the changes). */
interface RawStack extends Raw {
  queues?: Record<string, Raw>;
  database?: Raw & { admin?: Raw; task?: Raw };
  hub?: Raw & { default?: Raw; regions?: Record<string, Raw> };
  hubTenants?: (Raw & { hubTenantId: string })[];
}

export function localOverrides(stack: Raw, endpoints: LocalEndpoints, secrets: LocalSecrets): Raw {
  const raw = stack as RawStack;
  const queues: Record<string, Raw> = {};
  for (const [region, queue] of Object.entries(raw.queues ?? {})) {
    queues[region] = { ...queue, baseUrl: endpoints.queues[region as HubRegion], clientSecret: secrets.queues[region] };
  }
  return {
    ...raw,
    environment: "LOCAL",
    database: {
      ...raw.database,
      host: endpoints.database.host,
      port: endpoints.database.port,
      sslMode: "disable",
      // The embedded server is on loopback, without TLS: no CA bundle, no tunnel.
      caBundle: undefined,
      provisioning: undefined,
      // The stack's admin login, not the server's superuser: provisioning meets the warehouse as RDS gives it.
      admin: { ...raw.database?.admin, password: secrets.adminPassword },
      task: { ...raw.database?.task, password: secrets.taskPassword },
      // The sample publish tables are the loader's, as a warehouse's are its HR loader's (task/model/sampleData.ts).
      publishTableOwners: [SAMPLE_LOADER_ROLE],
    },
    // Every hub region's APIs are the emulator's; the regions keep their environment names.
    hub: {
      ...raw.hub,
      default: { ...raw.hub?.default, apis: endpoints.hubApis },
      regions: Object.fromEntries(
        Object.entries(raw.hub?.regions ?? {}).map(([region, env]) => [region, { ...env, apis: endpoints.hubApis }]),
      ),
      allowLoopback: true,
    },
    queues,
    hubTenants: (raw.hubTenants ?? []).map((t) => ({ ...t, clientSecret: secrets.tenants[t.hubTenantId] })),
  };
}
