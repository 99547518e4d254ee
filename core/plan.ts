/**
 * Everything the installation procedure creates for a stack, computed from validated config with no I/O. The Pulumi
 * components and local mode both provision from this plan.
 */
import type { StackConfig, HubTenant } from "../config/schema";
import { renderTemplate, regionsInUse, type PipelineTemplate, type RenderedTemplate } from "./template";
import { renderBaseline, type BaselineSource } from "./baseline";
import { hubApiConfigRows, hubPlatConfigRows, type ConfigRow } from "./rows";
import { connectionRecords, type ConnectionRecord } from "./connections";
import { bucketObjects, type BucketObject } from "./bucketObjects";
import { routingRulesFor, type RoutingRule } from "./routingRules";
import { encodeCredentialsString } from "./credentials";
import { scriptFileEntries, type ScriptFileEntries } from "./credentialFiles";
import { Secret } from "./secret";
import { intakeJobQuery, schemaOnly, clientTables, renderedPipelineKey, TABLES } from "./naming";
import type { HubRegion } from "./regions";
import { hubEnvironment } from "./tenants";

export interface TenantRoutingRules {
  tenant: HubTenant;
  cfgApiUrl: string;
  rules: RoutingRule[];
  /** The tenant's credentials string, for the Basic header. */
  credentialsString: Secret;
}

export interface InstallationPlan {
  config: StackConfig;
  regions: HubRegion[];
  template: RenderedTemplate;
  baseline: { name: string; buildNumber: string; sha256: string; sql: string };
  bucketObjects: BucketObject[];
  /** This stack's part of the shared credentials.ini and tenant_credentials.txt. */
  scriptFiles: ScriptFileEntries;
  /** Bucket key of the rendered pipeline the task runs. */
  definitionKey: string;
  connections: ConnectionRecord[];
  rows: { apiConfig: ConfigRow[]; platConfig: ConfigRow[] };
  routingRules: TenantRoutingRules[];
  stagingSchema: string;
  publishSchema: string;
  tables: typeof TABLES & ReturnType<typeof clientTables>;
  intakeJobQuery: string;
}

export function planInstallation(
  config: StackConfig,
  sources: { template: PipelineTemplate; baseline: BaselineSource & { buildNumber: string; sha256: string }; databaseCaPem?: string },
): InstallationPlan {
  const template = renderTemplate(sources.template, config);
  return {
    config,
    regions: regionsInUse(config),
    template,
    baseline: { name: sources.baseline.name, buildNumber: sources.baseline.buildNumber, sha256: sources.baseline.sha256, sql: renderBaseline(sources.baseline, config) },
    bucketObjects: bucketObjects(config, sources.template, template),
    definitionKey: renderedPipelineKey(config.jobName),
    scriptFiles: scriptFileEntries(config),
    connections: connectionRecords(config, sources.databaseCaPem),
    rows: { apiConfig: hubApiConfigRows(config), platConfig: hubPlatConfigRows(config) },
    // Each hub tenant's rules go to its own region's CFG API.
    routingRules: config.hubTenants.map((tenant) => ({
      tenant,
      cfgApiUrl: hubEnvironment(config, tenant.hubRegion).apis.CFG,
      rules: routingRulesFor(tenant),
      credentialsString: Secret.plain(encodeCredentialsString({ clientId: tenant.clientId, clientSecret: tenant.clientSecret.reveal(`tenant ${tenant.hubTenantId} clientSecret`) })),
    })),
    stagingSchema: schemaOnly(config.stagingSchema),
    publishSchema: schemaOnly(config.publishSchema),
    tables: { ...TABLES, ...clientTables(config.clientName) },
    intakeJobQuery: intakeJobQuery(config),
  };
}
