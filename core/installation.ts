/**
 * Everything the installation procedure creates for a stack, computed from validated config with no I/O. The Pulumi
 * components and local mode both provision from it.
 */
import type { StackConfig, HubTenant } from "./stackConfig";
import { renderTemplate, regionsInUse, type PipelineTemplate, type RenderedTemplate } from "./template";
import { renderBaseline, renderCommonSchema, type BaselineSource } from "./baseline";
import { clientRunTables, commonSchemaTables, type SqlTables } from "./sqlTables";
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

/** A SQL file of templates/sql rendered for the stack; sha256 is the file's (tags still in). */
export interface RenderedSql {
  name: string;
  buildNumber: string;
  sha256: string;
  sql: string;
  /** Its tables and their columns (core/sqlTables.ts): what an adopted table must have. */
  tables: SqlTables;
}

type SqlSource = BaselineSource & { buildNumber: string; sha256: string };

export interface Installation {
  config: StackConfig;
  regions: HubRegion[];
  template: RenderedTemplate;
  /** The common schema (procedure step 5.1): the same SQL for every client of the environment. */
  baseline: RenderedSql;
  /** This client's run tables (messages, _ARCHIVE, _STATUS), applied after the common schema. */
  runTables: RenderedSql;
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

export function installationOf(
  config: StackConfig,
  sources: { template: PipelineTemplate; baseline: SqlSource; runTables: SqlSource; databaseCaPem?: string },
): Installation {
  const template = renderTemplate(sources.template, config);
  return {
    config,
    regions: regionsInUse(config),
    template,
    baseline: rendered(
      sources.baseline,
      renderCommonSchema(sources.baseline, config),
      commonSchemaTables(config.stagingSchema),
    ),
    runTables: rendered(
      sources.runTables,
      renderBaseline(sources.runTables, config),
      clientRunTables(config.stagingSchema, config.clientName),
    ),
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
      credentialsString: Secret.plain(
        encodeCredentialsString({
          clientId: tenant.clientId,
          clientSecret: tenant.clientSecret.reveal(`tenant ${tenant.hubTenantId} clientSecret`),
        }),
      ),
    })),
    stagingSchema: schemaOnly(config.stagingSchema),
    publishSchema: schemaOnly(config.publishSchema),
    tables: { ...TABLES, ...clientTables(config.clientName) },
    intakeJobQuery: intakeJobQuery(config),
  };
}

function rendered(source: SqlSource, sql: string, tables: SqlTables): RenderedSql {
  return { name: source.name, buildNumber: source.buildNumber, sha256: source.sha256, sql, tables };
}
