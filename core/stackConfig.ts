/**
 * A stack's configuration as the rest of the project uses it: validated, defaults applied, secrets as Secret. Defined
 * here, at the bottom, so that core shapes what it needs; config/schema.ts's zod schema produces exactly this type (a
 * compile-time check there keeps the two equal) and holds the rules, defaults and messages (docs/pulumi.md lists the
 * keys).
 */
import type { BusinessObject } from "./clsTable";
import type { HubApiName, HubContract } from "./hubContract";
import type { HubRegion } from "./regions";
import type { Secret } from "./secret";

export type { HubRegion };

/** A region's hub environment, complete: its name and the base URL of each hub API. */
export interface HubEnvironment {
  environmentName: string;
  apis: Record<HubApiName, string>;
}

/** What a stack file says of an environment (hub.default, hub.regions.<R>): parts, completed per region. */
interface HubEnvironmentPart {
  environmentName?: string;
  apis?: Partial<Record<HubApiName, string>>;
}

export interface RoutingRule {
  dataDomainCode: string;
  isDataMastered: number;
  systemRoleCodeSource: string;
  systemRoleCodeTarget: string;
  status: number;
}

export interface HubTenant {
  hubTenantId: string;
  hubTenantCode: string;
  hubRegion: HubRegion;
  clientId: string;
  clientSecret: Secret;
  /** A custom rule set; the specification's otherwise. */
  routingRules?: RoutingRule[];
}

export interface PlatTenant {
  platRegion: string;
  codebase: string;
  gblOrUs: string;
  secureViewSource: string | null;
  connectorId: string | null;
  hubTenantCode: string;
}

export interface QueueConnection {
  connectionName: string;
  baseUrl: string;
  queueName: string;
  clientAccessId: string;
  clientSecret: Secret;
  description?: string;
}

export interface ConcurrencyRange {
  floor: number;
  ceiling: number;
}

export interface ClsConfig {
  exports: string;
  businessObjects: Partial<Record<BusinessObject, { file?: string; code?: string; description?: string }>>;
  strict: boolean;
}

export interface StackConfig {
  environment: string;
  clientName: string;
  jobName: string;
  publishSchema: string;
  stagingSchema: string;
  parameters: {
    records_per_hub_message: number;
    records_per_ers_request: number;
    idl_date: string;
    system_code: string;
    EmpTypeDefault: string;
    EmpGenderDefault: string;
    change_lag_seconds: number;
    set_aside_after_runs: number;
  };
  hubContract: HubContract;
  bucket: {
    name: string;
    create: boolean;
    connectionName: string;
    accessLogs: { retentionDays: number | undefined; bucket?: string; prefix?: string };
    kmsKeyArn?: string;
  };
  database: {
    database: string;
    sslMode: "disable" | "require" | "verify-full";
    admin: { username: string; password: Secret };
    task: { username: string; password: Secret };
    publishTableOwners: string[];
    host: string;
    port: number;
    connectionName: string;
    caBundle?: string;
    provisioning?: { host: string; port: number };
  };
  connectionStore: { prefix: string };
  hub: {
    /** Each region's environment, complete; a region is left out while incomplete. */
    environments: Partial<Record<HubRegion, HubEnvironment>>;
    regions: Partial<Record<HubRegion, HubEnvironmentPart>>;
    allowLoopback: boolean;
    default?: HubEnvironmentPart;
  };
  queues: Partial<Record<HubRegion, QueueConnection>>;
  hubTenants: HubTenant[];
  platTenants: PlatTenant[];
  schedule: { expression: string; timezone: string; enabled: boolean };
  network: { subnetIds: string[]; securityGroupIds: string[]; assignPublicIp: boolean };
  task: { cpu: number; memory: number; logRetentionDays: number; clusterArn?: string };
  image: { pullAccounts: string[]; adoptRepository: boolean; promoted?: string };
  concurrency: {
    queue: ConcurrencyRange;
    ers: ConcurrencyRange;
    regions: Partial<Record<HubRegion, { queue?: Partial<ConcurrencyRange>; ers?: Partial<ConcurrencyRange> }>>;
  };
  alerts: { email: string[]; https: Secret[]; noCompletedRunWithinHours?: number };
  cls?: ClsConfig;
  scriptsRelease?: { zip: string };
}
