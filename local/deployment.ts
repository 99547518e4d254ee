/**
 * What a start provisioned, recorded in the state folder (`deployments/<client>.json`), so that the next start
 * converges like `pulumi up`: what the stack config no longer has is deleted. The emulator starts empty at every
 * start, so its routing rules need no deletion.
 */
import fs from "node:fs";
import path from "node:path";
import type { Installation } from "../core/installation";
import { BUCKET_FOLDERS, TABLES, clientTables, connectionFileName } from "../core/naming";
import { deleteRow } from "../providers/sqlRows";
import { withPgClient, inPgTransaction, quoteIdent } from "../providers/pg";
import { releaseScriptFiles } from "../providers/scriptFiles";
import { NOT_SENT, MESSAGE_STATUS } from "../task/warehouse/messageStatus";
import type { LocalPaths } from "./paths";
import { writeAtomic } from "./stores";
import { UserError } from "../core/errors";
import { makeFolder, PRIVATE_FOLDER_MODE } from "../providers/folders";
import { LOCAL_ACTOR } from "./status";

export interface LocalDeployment {
  clientName: string;
  jobName: string;
  stagingSchema: string;
  rows: { table: string; key: Record<string, string> }[];
  hubTenantIds: string[];
  /** Hub tenant id → code, for what the summary names (absent from records of earlier builds). */
  hubTenantCodes?: Record<string, string>;
  /** System names of the connection records. */
  connections: string[];
}

/** What gone resources a start deleted, for the progress line and the tests. */
export interface Removed {
  rows: string[];
  hubTenantIds: string[];
  /** The removed hub tenants' codes, where the previous record has them. */
  hubTenantCodes: Record<string, string>;
  connections: string[];
  /** Messages of removed hub tenants that no run sends any more (DISCARDED). */
  messages: number;
}

export function deploymentFile(paths: LocalPaths, clientName: string): string {
  return path.join(paths.root, "deployments", `${clientName}.json`);
}

export function deploymentOf(installation: Installation): LocalDeployment {
  return {
    clientName: installation.config.clientName,
    jobName: installation.config.jobName,
    stagingSchema: installation.stagingSchema,
    rows: [...installation.rows.apiConfig, ...installation.rows.platConfig].map((r) => ({
      table: r.table,
      key: r.key,
    })),
    hubTenantIds: installation.config.hubTenants.map((t) => t.hubTenantId),
    hubTenantCodes: Object.fromEntries(installation.config.hubTenants.map((t) => [t.hubTenantId, t.hubTenantCode])),
    connections: installation.connections.map((c) => c.systemName),
  };
}

export function writeDeployment(paths: LocalPaths, deployment: LocalDeployment): void {
  const file = deploymentFile(paths, deployment.clientName);
  makeFolder(path.dirname(file), PRIVATE_FOLDER_MODE);
  writeAtomic(file, JSON.stringify(deployment, null, 2) + "\n", 0o600);
}

/**
 * The previous start's record; a state folder from before the record existed: what the database holds for the client
 * (its HUB_PLAT_CONFIG rows, the HUB_API_CONFIG rows of the hub tenants they feed, their queue connections).
 */
export async function previousDeployment(
  paths: LocalPaths,
  installation: Installation,
  dbUrl: string,
): Promise<LocalDeployment> {
  const file = deploymentFile(paths, installation.config.clientName);
  if (fs.existsSync(file)) {
    try {
      return JSON.parse(fs.readFileSync(file, "utf8")) as LocalDeployment;
    } catch (err) {
      throw new UserError(
        `${file}: not the record of the previous start (${(err as Error).message}); correct it, or remove it: the next start then reads what the database holds`,
      );
    }
  }
  const staging = quoteIdent(installation.stagingSchema, "schema");
  return withPgClient(dbUrl, async (client) => {
    const { rows: present } = await client.query<{ ok: boolean }>(
      "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ok",
      [`${installation.stagingSchema}.${TABLES.platConfig}`, `${installation.stagingSchema}.${TABLES.apiConfig}`],
    );
    const none = { ...deploymentOf(installation), rows: [], hubTenantIds: [], hubTenantCodes: {}, connections: [] };
    if (!present[0].ok) return none;
    const { rows: plat } = await client.query<{
      plat_region: string;
      hub_tenant_id: string;
      hub_tenant_code: string;
      hub_destination: string;
    }>(
      `SELECT plat_region, hub_tenant_id, hub_tenant_code, hub_destination FROM ${staging}.${TABLES.platConfig} WHERE plat_client_name = $1`,
      [installation.config.clientName],
    );
    const tenants = [...new Set(plat.map((r) => r.hub_tenant_id))];
    const { rows: api } = await client.query<{ hub_tenant_id: string; hub_api_name: string }>(
      `SELECT hub_tenant_id, hub_api_name FROM ${staging}.${TABLES.apiConfig} WHERE hub_tenant_id = ANY($1::text[])`,
      [tenants],
    );
    return {
      ...none,
      rows: [
        ...api.map((r) => ({
          table: TABLES.apiConfig,
          key: { hub_tenant_id: r.hub_tenant_id, hub_api_name: r.hub_api_name },
        })),
        ...plat.map((r) => ({
          table: TABLES.platConfig,
          key: { plat_client_name: installation.config.clientName, plat_region: r.plat_region },
        })),
      ],
      hubTenantIds: tenants,
      hubTenantCodes: Object.fromEntries(plat.map((r) => [r.hub_tenant_id, r.hub_tenant_code])),
      connections: [...new Set(plat.map((r) => r.hub_destination))],
    };
  });
}

const rowId = (r: { table: string; key: Record<string, string> }) =>
  `${r.table}/${Object.values(r.key).join("/")}`.toLowerCase();

/** Deletes what `previous` provisioned and `current` does not have any more. */
export async function removeGone(
  previous: LocalDeployment,
  current: LocalDeployment,
  paths: LocalPaths,
  dbUrl: string,
): Promise<Removed> {
  const keep = new Set(current.rows.map(rowId));
  const goneRows = previous.rows.filter((r) => !keep.has(rowId(r)));
  for (const row of goneRows) await deleteRow(dbUrl, { schema: previous.stagingSchema, ...row });

  const tenants = new Set(current.hubTenantIds.map((t) => t.toLowerCase()));
  const goneTenants = previous.hubTenantIds.filter((t) => !tenants.has(t.toLowerCase()));
  const scripts = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
  if (goneTenants.length && fs.existsSync(scripts))
    await releaseScriptFiles({ kind: "folder", dir: scripts }, goneTenants);

  const connections = new Set(current.connections);
  const goneConnections = previous.connections.filter((c) => !connections.has(c));
  for (const c of goneConnections) fs.rmSync(path.join(paths.connections, connectionFileName(c)), { force: true });

  const messages = goneTenants.length ? await discardTenantsRunState(previous, goneTenants, dbUrl) : 0;
  const hubTenantCodes = Object.fromEntries(
    goneTenants.flatMap((id) => (previous.hubTenantCodes?.[id] ? [[id, previous.hubTenantCodes[id]]] : [])),
  );
  return {
    rows: goneRows.map(rowId),
    hubTenantIds: goneTenants,
    hubTenantCodes,
    connections: goneConnections,
    messages,
  };
}

/**
 * The run-table state of removed hub tenants: their queued messages leave the work queue, those not sent become
 * DISCARDED (no run sends them to a tenant the stack no longer has), their watermarks go (added again, a tenant starts
 * with a full load), and the run history says so. In one transaction.
 */
async function discardTenantsRunState(previous: LocalDeployment, tenantIds: string[], dbUrl: string): Promise<number> {
  const s = quoteIdent(previous.stagingSchema, "schema");
  const t = clientTables(previous.clientName);
  const table = (name: string) => `${s}.${quoteIdent(name.toLowerCase(), "table")}`;
  const ids = tenantIds.map((id) => id.toLowerCase());
  return withPgClient(dbUrl, async (client) => {
    const { rows: present } = await client.query<{ ok: boolean }>("SELECT to_regclass($1) IS NOT NULL AS ok", [
      `${previous.stagingSchema}.${t.status.toLowerCase()}`,
    ]);
    if (!present[0].ok) return 0;
    return inPgTransaction(client, async () => {
      const reason = `hub tenant removed from the stack config (${LOCAL_ACTOR})`;
      await client.query(`DELETE FROM ${table(t.messages)} WHERE lower(hub_tenant_id) = ANY($1::text[])`, [ids]);
      const unsent = NOT_SENT.map((x) => `'${x}'`).join(", ");
      const updated = await client.query(
        `UPDATE ${table(t.status)} SET status = '${MESSAGE_STATUS.discarded}', reason = $2, updated_at = now()
          WHERE lower(hub_tenant_id) = ANY($1::text[]) AND status NOT IN (${unsent})`,
        [ids, reason],
      );
      const inserted = await client.query(
        `INSERT INTO ${table(t.status)} (message_id, transaction_id, hub_tenant_id, hub_destination, status, reason)
         SELECT a.message_id, a.transaction_id, a.hub_tenant_id, a.hub_destination, '${MESSAGE_STATUS.discarded}', $2
           FROM ${table(t.archive)} a WHERE lower(a.hub_tenant_id) = ANY($1::text[])
            AND NOT EXISTS (SELECT 1 FROM ${table(t.status)} x WHERE x.message_id = a.message_id)`,
        [ids, reason],
      );
      await client.query(
        `DELETE FROM ${s}.${TABLES.watermark} WHERE plat_client_name = $1 AND lower(hub_tenant_id) = ANY($2::text[])`,
        [previous.clientName, ids],
      );
      const messages = (updated.rowCount ?? 0) + (inserted.rowCount ?? 0);
      await client.query(
        `INSERT INTO ${s}.${TABLES.runHistory} (plat_client_name, job_name, event, actor, detail) VALUES ($1, $2, 'Discard', $3, $4::jsonb)`,
        [
          previous.clientName,
          previous.jobName,
          LOCAL_ACTOR,
          JSON.stringify({ reason, hubTenantIds: tenantIds, messages }),
        ],
      );
      return messages;
    });
  });
}
