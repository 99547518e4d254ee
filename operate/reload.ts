/**
 * Reloading a tenant: its export watermarks (HUB_EXPORT_WATERMARK) are removed, so that the next run exports every
 * employee of the tenant, or of one of its countries, from idl_date again; the other tenants and countries stay
 * incremental. In one database transaction that holds the client's run lock: it refuses while a run works, and no
 * run starts until it is done. Who did it, when and why go to HUB_EXPORT_RUN_HISTORY (event Reload).
 */
import type { Client } from "pg";
import { TABLES, clientTables } from "../core/naming";
import { PUBLISH_TABLES } from "../task/model/schema";
import { ident, operatorTransaction, recordOperatorAction } from "./runLock";

export interface ReloadTarget {
  hubTenantId: string;
  hubTenantCode: string;
  /** The platform regions (HUB_PLAT_CONFIG.plat_region) whose employees the hub tenant receives. */
  platRegions: string[];
}

export interface ReloadInput {
  stagingSchema: string;
  publishSchema: string;
  clientName: string;
  jobName: string;
  idlDate: string;
  tenant: ReloadTarget;
  /** One country of the tenant (ISO 3166 alpha-2); all of them when absent. */
  country?: string;
  actor: string;
  reason?: string;
}

export interface ReloadResult {
  historyId: string;
  recordedAt: Date;
  actor: string;
  tenant: ReloadTarget;
  country: string | null;
  /** The watermarks removed: where the next run would have started for each country. */
  watermarksReset: { country: string; changedThrough: string; transactionId: string }[];
  /** Employees the next run exports for it (as the publish schema holds them now). */
  employees: number;
  /** Failed messages of the client that the next run also retries. */
  failedMessagesPending: number;
  idlDate: string;
  jobName: string;
}

export async function reloadTenant(client: Client, input: ReloadInput): Promise<ReloadResult> {
  const staging = ident(input.stagingSchema);
  const publish = ident(input.publishSchema);
  const t = {
    watermark: `${staging}.${TABLES.watermark}`,
    history: `${staging}.${TABLES.runHistory}`,
    messages: `${staging}.${ident(clientTables(input.clientName).messages)}`,
  };
  // A stopped run resumes first and then advances the watermarks it scanned: that would undo the reload.
  const lock = {
    stagingSchema: staging,
    clientName: input.clientName,
    action: "reload",
    undone: "advances the watermarks it scanned, which would undo a reload now",
    tables: [t.watermark],
  };
  return operatorTransaction(client, lock, async () => {
    const country = input.country ?? null;
    const { rows: removed } = await client.query<{
      country_code: string;
      changed_through: string;
      transaction_id: string;
    }>(
      `DELETE FROM ${t.watermark} WHERE plat_client_name = $1 AND hub_tenant_id = $2 AND ($3::text IS NULL OR country_code = $3)
       RETURNING country_code, to_char(changed_through, 'YYYY-MM-DD"T"HH24:MI:SS') AS changed_through, transaction_id`,
      [input.clientName, input.tenant.hubTenantId, country],
    );
    // Counted by the employee's own change time (the extract also looks at its sub-entities).
    const { rows: scope } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${publish}.${PUBLISH_TABLES.employee} WHERE plat_region = ANY($1::text[]) AND ($2::text IS NULL OR country_code = $2) AND changed_at > $3::timestamp`,
      [input.tenant.platRegions, country, input.idlDate],
    );
    const { rows: failed } = await client
      .query<{ n: string }>(`SELECT count(*) AS n FROM ${t.messages}`)
      .catch(() => ({ rows: [{ n: "0" }] }));
    const watermarksReset = removed
      .map((r) => ({ country: r.country_code, changedThrough: r.changed_through, transactionId: r.transaction_id }))
      .sort((a, b) => a.country.localeCompare(b.country));
    const employees = Number(scope[0].n);
    const detail = {
      hubTenantId: input.tenant.hubTenantId,
      hubTenantCode: input.tenant.hubTenantCode,
      platRegions: input.tenant.platRegions,
      country,
      watermarksReset,
      employeesInScope: employees,
      idlDate: input.idlDate,
      reason: input.reason ?? null,
    };
    const recorded = await recordOperatorAction(client, t.history, {
      clientName: input.clientName,
      jobName: input.jobName,
      event: "Reload",
      actor: input.actor,
      detail,
    });
    return {
      ...recorded,
      actor: input.actor,
      tenant: input.tenant,
      country,
      watermarksReset,
      employees,
      failedMessagesPending: Number(failed[0].n),
      idlDate: input.idlDate,
      jobName: input.jobName,
    };
  });
}

/** What the operator reads: what was done, and what the next run will do. */
export function formatReload(r: ReloadResult, startNow: string): string {
  const regions = `platform region${r.tenant.platRegions.length === 1 ? "" : "s"} ${r.tenant.platRegions.join(", ") || "none"}`;
  const what = `tenant ${r.tenant.hubTenantId} (${r.tenant.hubTenantCode}, ${regions})${r.country ? `, country ${r.country}` : ", all countries"}`;
  const lines = [
    `Reload recorded in HUB_EXPORT_RUN_HISTORY (id ${r.historyId}) at ${r.recordedAt.toISOString()} by ${r.actor}:`,
    `  ${what}`,
    r.watermarksReset.length
      ? `  watermarks removed: ${r.watermarksReset.map((w) => `${w.country} (was through ${w.changedThrough})`).join(", ")}`
      : "  no watermark was set for it: the next run exports it in full anyway",
    "",
    `The next run of ${r.jobName} exports ${r.employees.toLocaleString("en-US")} employee(s) of this ${r.country ? "country" : "tenant"} in full, from idl_date ${r.idlDate};`,
    "other tenants and countries stay incremental." +
      (r.failedMessagesPending
        ? ` It also retries ${r.failedMessagesPending.toLocaleString("en-US")} failed message(s) of earlier runs.`
        : ""),
    `It is the next scheduled run, or one started now: ${startNow}`,
  ];
  return lines.join("\n") + "\n";
}
