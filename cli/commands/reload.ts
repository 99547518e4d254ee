/**
 * `hub-export reload`: the next run exports a tenant (or one of its countries) in full from idl_date again. The
 * database: --database-url; else the stack's own (--stack or --file: its host, port, database and TLS mode, as the
 * task's login unless --user, the password from PGPASSWORD or ~/.pgpass); else the embedded default's (`npm start`).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, type ClientConfig } from "pg";
import { defineCommand } from "../command";
import { UserError, UsageError } from "../../core/errors";
import { schemaOnly } from "../../core/naming";
import { loadFromOptions, stackOptions } from "../stackOptions";
import type { StackConfig } from "../../config/schema";
import { formatReload, reloadTenant, type ReloadTarget } from "../../operate/reload";
import { DATABASE_OPTIONS, openCommandDatabase } from "../database";

/** --tenant: a hub tenant of the stack, by id or code, with the platform regions (platform tenants) that feed it. */
export function resolveTenant(config: StackConfig, wanted: string): ReloadTarget {
  const t = config.hubTenants.find((h) => h.hubTenantId.toLowerCase() === wanted.toLowerCase() || h.hubTenantCode === wanted);
  if (!t) {
    const known = config.hubTenants.map((h) => {
      const regions = platRegionsOf(config, h.hubTenantCode);
      return `${h.hubTenantId} (${h.hubTenantCode}, ${h.hubRegion}, platform region${regions.length === 1 ? "" : "s"} ${regions.join(", ") || "none"})`;
    });
    throw new UserError([`--tenant ${wanted}: no such hub tenant in the stack config; its tenants are:`, ...known.map((k) => `  ${k}`)]);
  }
  return { hubTenantId: t.hubTenantId, hubTenantCode: t.hubTenantCode, platRegions: platRegionsOf(config, t.hubTenantCode) };
}

function platRegionsOf(config: StackConfig, hubTenantCode: string): string[] {
  return config.platTenants.filter((p) => p.hubTenantCode === hubTenantCode).map((p) => p.platRegion);
}

export default defineCommand({
  summary: "Reset a hub tenant's export watermarks (or one country's) so that the next run exports it in full from idl_date",
  options: {
    tenant: { type: "string", value: "ID|CODE", required: true, description: "The hub tenant, by its id (UUID) or code in hubExport:hubTenants; every platform tenant feeding it is reloaded", example: "--tenant ACME_US_QA" },
    country: { type: "string", value: "CC", description: "Only this country (ISO 3166 alpha-2) of the tenant", defaultText: "every country", example: "--country DE" },
    ...stackOptions,
    ...DATABASE_OPTIONS,
    user: { type: "string", value: "NAME", description: "With --stack/--file and no --database-url: the database login", defaultText: "hubExport:database.task.username", example: "--user platform_admin" },
    reason: { type: "string", value: "TEXT", description: "Why: recorded in the run history's detail", example: "--reason \"hub lost the tenant's users\"" },
    actor: { type: "string", value: "NAME", description: "Who: the run history's actor", defaultText: "<user>@<host>", example: "--actor alice" },
    json: { type: "boolean", description: "Print the result as one JSON object", example: "--json" },
  },
  details: [
    "The database: --database-url; else, with --stack or --file, the stack's own (hubExport:database host, port, database, TLS mode) as the task's login (or --user), the password from PGPASSWORD or ~/.pgpass as for psql; else the embedded default's (npm start, --dir).",
    "It runs in one transaction holding the client's run lock: it refuses while a run works, and while a stopped run waits to be resumed (that run's finish would advance the watermarks again). Each reload is a Reload row in HUB_EXPORT_RUN_HISTORY.",
  ],
  examples: [
    { command: "npx hub-export reload --stack qa --tenant ACME_US_QA --reason \"hub lost the tenant's users\"", does: "the next run exports every employee of the US hub tenant again" },
    { command: "npx hub-export reload --tenant ACME_US_QA --country CA", does: "the same for one country, on the embedded default's database" },
  ],
  exitCodes: { 1: "refused (a run holds the lock, or waits to be resumed), an unknown tenant, or a database problem: the message names it" },
  async run(values, io) {
    if (!values.tenant) throw new UsageError("--tenant is required: a hub tenant id or code");
    const country = values.country?.toUpperCase();
    if (country !== undefined && !/^[A-Z]{2}$/.test(country)) throw new UsageError(`--country must be an ISO 3166 alpha-2 country code, like DE, got '${values.country}'`);
    if (values["database-url"] && values.dir) throw new UsageError("give --database-url or --dir, not both");
    const config = loadFromOptions(values);
    const tenant = resolveTenant(config, values.tenant);
    const actor = values.actor ?? `${os.userInfo().username}@${os.hostname()}`;

    let startNow = `npx hub-export run-now --stack ${values.stack ?? "<stack>"} --wait`;
    let db: { client: Client; close(): Promise<void> };
    if (values["database-url"] || !(values.stack || values.file)) {
      // --database-url, or the embedded default's database (started for the command when it is not running).
      db = await openCommandDatabase(values);
      if (!values["database-url"]) startNow = "npm start";
    } else {
      const d = config.database;
      const ssl = d.sslMode === "disable" ? false : { rejectUnauthorized: d.sslMode === "verify-full" };
      // No password here: node-postgres takes PGPASSWORD or a ~/.pgpass entry, as psql does.
      const connection: ClientConfig = { host: d.host, port: d.port, database: d.database, user: values.user ?? d.task.username, ssl, application_name: "hub-export-reload", connectionTimeoutMillis: 15_000 };
      if (!process.env.PGPASSWORD && !fs.existsSync(process.env.PGPASSFILE ?? path.join(os.homedir(), ".pgpass"))) {
        throw new UserError(`no password for ${connection.user}@${d.host}: set PGPASSWORD or add a ~/.pgpass entry (the stack's 'pulumi config get --path hubExport:database.task.password')`);
      }
      const client = new Client(connection);
      try {
        await client.connect();
      } catch (err) {
        throw new UserError(`cannot connect to the database: ${(err as Error).message}`);
      }
      db = { client, close: () => client.end().catch(() => {}) };
    }
    const client = db.client;
    try {
      const result = await reloadTenant(client, {
        stagingSchema: schemaOnly(config.stagingSchema),
        publishSchema: schemaOnly(config.publishSchema),
        clientName: config.clientName,
        jobName: config.jobName,
        idlDate: config.parameters.idl_date,
        tenant,
        country,
        actor,
        reason: values.reason,
      }).catch((err: Error & { code?: string }) => {
        // A database refusal (permissions, a missing column): its message, without a stack trace.
        if (typeof err.code === "string" && /^[0-9A-Z]{5}$/.test(err.code)) throw new UserError(`the database refused the reload: ${err.message}`);
        throw err;
      });
      io.stdout.write(values.json ? JSON.stringify(result, null, 2) + "\n" : formatReload(result, startNow));
      return 0;
    } finally {
      await db.close();
    }
  },
});
