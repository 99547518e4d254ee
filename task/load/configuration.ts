/**
 * Step 1 of a run, complete: everything the run needs, loaded and checked before any data is touched. Every problem
 * found is a UserError (exit 1) naming what to fix; several problems of the configuration tables are reported at once.
 */
import type { Pool } from "pg";
import { taskOf, type PipelineDefinition } from "../../core/definition";
import { UserError } from "../../core/errors";
import { BASELINE_NAME_PREFIX, CLIENT_RUN_TABLES_NAME_PREFIX, databaseOf } from "../../core/naming";
import type { HubRegion } from "../../core/regions";
import type { Logger } from "../log";
import { loadDefinition } from "./definition";
import { credentialsStringOf, loadScriptFiles, otherEntries } from "./scriptFiles";
import { openConnectionStore } from "../connections/store";
import { databaseSettings, queueEndpoint, type QueueEndpoint } from "../connections/record";
import { ACK_POOL_SIZE, closePools, openDatabase, type Deadline } from "../warehouse/database";
import { runTables, type RunTables } from "../warehouse/tables";
import { PUBLISH_TABLES } from "../model/schema";
import { endpointProblem, shownUrl } from "../../core/hubEndpoints";
import { HUB_API_NAMES } from "../../core/hubContract";

export interface RunInputs {
  /** A path or s3:// URL of the rendered definition. */
  definition: string;
  /** The scripts folder: a path or s3://bucket/prefix/. */
  scripts: string;
  /** A folder of connection files, or secretsmanager:PREFIX. */
  connections: string;
}

/** A platform tenant of the client (one HUB_PLAT_CONFIG row) with the hub tenant it feeds. */
export interface TenantConfig {
  hubTenantId: string;
  hubTenantCode: string;
  platRegion: string;
  /** The queue connection's System Name (HUB_PLAT_CONFIG.hub_destination). */
  hubDestination: string;
  region: HubRegion;
  queue: QueueEndpoint;
  /** For the Basic header of the ERS and HRSYS APIs. Secret. */
  credentialsString: string;
  /** CFG only for the probe: the run itself never calls it. */
  apis: { ERS: string; HRSYS: string; CFG?: string };
}

export interface RunConfiguration {
  definition: PipelineDefinition;
  tables: RunTables;
  tenants: TenantConfig[];
  pool: Pool;
  /** Sessions that commit asynchronously, for the acknowledgement writers alone (warehouse/database.ts). */
  ackPool: Pool;
}

/** `deadline`: each warehouse statement's (the setting's default without it). */
export async function loadRunConfiguration(
  inputs: RunInputs,
  log: Logger,
  deadline?: Deadline,
): Promise<RunConfiguration> {
  const definition = await loadDefinition(inputs.definition);
  const scripts = await loadScriptFiles(inputs.scripts);
  const store = openConnectionStore(inputs.connections);
  try {
    if (scripts.warehouseConnection !== definition.connections.database) {
      log.warn(
        {
          event: "config.warning",
          warehouseConnection: scripts.warehouseConnection,
          definitionDatabase: definition.connections.database,
        },
        "credentials.ini names another database connection than the definition; credentials.ini wins",
      );
    }
    const record = await store.get(scripts.warehouseConnection);
    if (!record)
      throw new UserError(
        `unknown connection '${scripts.warehouseConnection}' (credentials.ini warehouse_connection): not in ${store.describe}`,
      );
    const settings = databaseSettings(record);
    const wanted = databaseOf(definition.parameters.publish_schema);
    if (wanted.toLowerCase() !== settings.database.toLowerCase()) {
      throw new UserError(
        `publish_schema ${definition.parameters.publish_schema} names database '${wanted}', but connection ${record.systemName} points to '${settings.database}'`,
      );
    }
    const tables = runTables(definition);
    const pool = await openDatabase(record.systemName, settings, { deadline });
    let ackPool: Pool | undefined;
    try {
      await checkTables(pool, tables);
      const tenants = await loadTenants(pool, definition, tables, scripts.tenantCredentials, store);
      // The file is shared: other tenants' entries are none of this run's business (counted, never read or checked).
      const others = otherEntries(
        scripts.tenantCredentials,
        distinctHubTenants(tenants).map((t) => t.hubTenantId),
      );
      if (others > 0)
        log.info(
          { event: "config.sharedEntries", file: "tenant_credentials.txt", otherTenants: others },
          `tenant_credentials.txt also holds ${others} other tenant(s)' entries: not read`,
        );
      ackPool = await openDatabase(record.systemName, settings, {
        max: ACK_POOL_SIZE,
        asynchronousCommit: true,
        deadline,
      });
      return { definition, tables, tenants, pool, ackPool };
    } catch (err) {
      await closePools(pool, ...(ackPool ? [ackPool] : []));
      throw err;
    }
  } finally {
    store.close();
  }
}

/** The hub tenants fed by the platform tenants, each once: what the HRSYS API is told about. */
export function distinctHubTenants(tenants: TenantConfig[]): TenantConfig[] {
  const seen = new Map<string, TenantConfig>();
  for (const t of tenants) if (!seen.has(t.hubTenantId.toLowerCase())) seen.set(t.hubTenantId.toLowerCase(), t);
  return [...seen.values()];
}

async function checkTables(pool: Pool, t: RunTables): Promise<void> {
  const common = [t.apiConfig, t.platConfig, t.watermark, t.intakeJob, t.run, t.runPart, t.runHistory];
  const client = [t.messages, t.status, t.archive];
  const publish = Object.values(PUBLISH_TABLES).map((name) => `${t.publishSchema}.${name}`);
  const { rows } = await pool.query<{ name: string; found: boolean }>(
    "SELECT name, to_regclass(name) IS NOT NULL AS found FROM unnest($1::text[]) AS name",
    [[...common, ...client, ...publish]],
  );
  const missing = new Set(rows.filter((r) => !r.found).map((r) => r.name));
  const lines = (
    [
      [common, "staging tables", `apply the common-schema baseline ${BASELINE_NAME_PREFIX}<BuildNumber>`],
      [client, "the client's run tables", `apply ${CLIENT_RUN_TABLES_NAME_PREFIX}<BuildNumber> for this client`],
      [publish, "publish schema tables", "see task/model/README.md"],
    ] as const
  ).flatMap(([names, what, fix]) => {
    const absent = names.filter((n) => missing.has(n));
    return absent.length ? [`${what} missing: ${absent.join(", ")} (${fix})`] : [];
  });
  if (lines.length) throw new UserError(lines);
}

async function loadTenants(
  pool: Pool,
  def: PipelineDefinition,
  t: RunTables,
  credentials: Map<string, unknown>,
  store: ReturnType<typeof openConnectionStore>,
): Promise<TenantConfig[]> {
  const client = def.parameters.client_name;
  const { rows } = await pool.query<{
    hub_tenant_id: string;
    hub_tenant_code: string;
    plat_region: string;
    hub_destination: string;
  }>(
    `SELECT hub_tenant_id, hub_tenant_code, plat_region, hub_destination FROM ${t.platConfig} WHERE plat_client_name = $1 ORDER BY plat_region`,
    [client],
  );
  if (rows.length === 0)
    throw new UserError(
      `${t.platConfig} has no row for client_name ${client}: insert one per tenant (procedure step 5.3)`,
    );
  const apiRows = await pool.query<{ hub_tenant_id: string; hub_api_name: string; hub_api_url: string }>(
    `SELECT lower(hub_tenant_id) AS hub_tenant_id, hub_api_name, hub_api_url FROM ${t.apiConfig} WHERE lower(hub_tenant_id) = ANY($1::text[])`,
    [rows.map((r) => r.hub_tenant_id.toLowerCase())],
  );
  const steps = taskOf(def, "PublishMessages").steps;
  const problems: string[] = [];
  // The config tables are shared and may have no key constraint: this client's rows must be one per key.
  problems.push(
    ...duplicateKeys(rows, (r) => `client_name ${client} and plat_region ${r.plat_region}`).map(
      ([key, n]) => `${t.platConfig} has ${n} rows for ${key}: delete all but one`,
    ),
  );
  problems.push(
    ...duplicateKeys(
      apiRows.rows,
      (r) => `hub_tenant_id ${r.hub_tenant_id} and hub_api_name ${r.hub_api_name}`,
      (r) => r.hub_api_url,
    ).map(([key, n]) => `${t.apiConfig} has ${n} rows with different URLs for ${key}: delete all but one`),
  );
  const tenants: TenantConfig[] = [];
  for (const row of rows) {
    const id = row.hub_tenant_id.toLowerCase();
    const label = `platform region ${row.plat_region} → hub tenant ${row.hub_tenant_id} (${row.hub_tenant_code})`;
    const found = credentialsStringOf(credentials, id);
    const credentialsString = "credentialsString" in found ? found.credentialsString : undefined;
    if ("problem" in found) problems.push(`${label}: ${found.problem}`);
    const step = steps.find((s) => s.connection === row.hub_destination);
    if (!step)
      problems.push(
        `${label}: hub_destination ${row.hub_destination} has no publish step in the definition (steps: ${steps.map((s) => s.connection).join(", ")})`,
      );
    const urls = new Map(
      apiRows.rows.filter((a) => a.hub_tenant_id === id).map((a) => [a.hub_api_name, a.hub_api_url]),
    );
    const missingApis = (["ERS", "HRSYS"] as const).filter((api) => !urls.get(api));
    if (missingApis.length)
      problems.push(`${label}: ${t.apiConfig} has no row for ${missingApis.join(", ")} (procedure step 5.2)`);
    let queue: QueueEndpoint | undefined;
    if (step) {
      const record = await store.get(row.hub_destination);
      if (!record)
        problems.push(
          `${label}: unknown connection '${row.hub_destination}' (hub_destination): not in ${store.describe}`,
        );
      else {
        try {
          queue = queueEndpoint(record);
        } catch (err) {
          if (!(err instanceof UserError)) throw err;
          problems.push(...err.lines.map((l) => `${label}: ${l.trim()}`));
        }
      }
      const named = `connection record ${row.hub_destination}`;
      const apis = HUB_API_NAMES.flatMap((api) =>
        urls.get(api)
          ? [{ url: urls.get(api)!, what: `${t.apiConfig} row ${api} (hub_tenant_id ${row.hub_tenant_id})` }]
          : [],
      );
      const queueUrls = queue
        ? [
            { url: queue.organizationsUrl, what: `${named} url` },
            { url: queue.authUrl, what: `${named} authUrl` },
          ]
        : [];
      // HUB_API_CONFIG is shared with other pipelines: a changed row must not redirect the export (core/hubEndpoints.ts).
      for (const { url, what } of [...apis, ...queueUrls]) {
        const problem = endpointProblem(url, step.region, def.endpoints);
        if (problem) problems.push(`${label}: ${what}: ${shownUrl(url)} ${problem}`);
      }
    }
    if (credentialsString && step && queue && !missingApis.length) {
      tenants.push({
        hubTenantId: row.hub_tenant_id,
        hubTenantCode: row.hub_tenant_code,
        platRegion: row.plat_region,
        hubDestination: row.hub_destination,
        region: step.region,
        queue,
        credentialsString,
        apis: { ERS: urls.get("ERS")!, HRSYS: urls.get("HRSYS")!, CFG: urls.get("CFG") },
      });
    }
  }
  if (problems.length)
    throw new UserError([
      `configuration of client ${client} is incomplete (${problems.length} problem${problems.length === 1 ? "" : "s"}):`,
      ...problems.map((p) => `  ${p}`),
    ]);
  return tenants;
}

/**
 * Keys found on more than one row, with how many (when `value` is given, only keys whose rows disagree on it:
 * identical copies are harmless).
 */
function duplicateKeys<T>(rows: T[], key: (row: T) => string, value?: (row: T) => unknown): [string, number][] {
  const byKey = new Map<string, T[]>();
  for (const row of rows) byKey.set(key(row), [...(byKey.get(key(row)) ?? []), row]);
  return [...byKey]
    .filter(([, found]) => found.length > 1 && (!value || new Set(found.map(value)).size > 1))
    .map(([k, found]) => [k, found.length]);
}
