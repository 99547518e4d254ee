/**
 * `hub-export reload`: the next run exports a tenant (or one of its countries) in full from idl_date again, in the
 * database cli/database.ts chooses (the stack's own with --stack or --file).
 */
import { defineCommand } from "../command";
import { UserError, UsageError } from "../../core/errors";
import { schemaOnly } from "../../core/naming";
import { loadFromOptions } from "../stackOptions";
import type { StackConfig } from "../../config/schema";
import { formatReload, reloadTenant, type ReloadTarget } from "../../operate/reload";
import { DATABASE_DETAILS, operatorAction, operatorActor, operatorOptions } from "../database";
import { cut } from "../../core/redact";

/** --tenant: a hub tenant of the stack, by id or code, with the platform regions (platform tenants) that feed it. */
export function resolveTenant(config: StackConfig, wanted: string): ReloadTarget {
  const t = config.hubTenants.find(
    (h) => h.hubTenantId.toLowerCase() === wanted.toLowerCase() || h.hubTenantCode === wanted,
  );
  if (!t) {
    const known = config.hubTenants.map((h) => {
      const regions = platRegionsOf(config, h.hubTenantCode);
      return `${h.hubTenantId} (${h.hubTenantCode}, ${h.hubRegion}, platform region${regions.length === 1 ? "" : "s"} ${regions.join(", ") || "none"})`;
    });
    throw new UserError([
      `--tenant ${cut(wanted)}: no such hub tenant in the stack config; its tenants are:`,
      ...known.map((k) => `  ${k}`),
    ]);
  }
  return {
    hubTenantId: t.hubTenantId,
    hubTenantCode: t.hubTenantCode,
    platRegions: platRegionsOf(config, t.hubTenantCode),
  };
}

function platRegionsOf(config: StackConfig, hubTenantCode: string): string[] {
  return config.platTenants.filter((p) => p.hubTenantCode === hubTenantCode).map((p) => p.platRegion);
}

export default defineCommand({
  summary:
    "Reset a hub tenant's export watermarks (or one country's) so that the next run exports it in full from idl_date",
  options: {
    tenant: {
      type: "string",
      value: "ID|CODE",
      required: true,
      description:
        "The hub tenant, by its id (UUID) or code in hubExport:hubTenants; every platform tenant feeding it is reloaded",
      example: "--tenant ACME_US_QA",
    },
    country: {
      type: "string",
      value: "CC",
      description: "Only this country (ISO 3166 alpha-2) of the tenant",
      defaultText: "every country",
      example: "--country DE",
    },
    ...operatorOptions('--reason "hub lost the tenant\'s users"'),
  },
  details: [
    DATABASE_DETAILS,
    "It runs in one transaction holding the client's run lock: it refuses while a run works, and while a stopped run waits to be resumed (that run's finish would advance the watermarks again). Each reload is a Reload row in HUB_EXPORT_RUN_HISTORY.",
  ],
  examples: [
    {
      command: 'npx hub-export reload --stack qa --tenant ACME_US_QA --reason "hub lost the tenant\'s users"',
      does: "the next run exports every employee of the US hub tenant again",
    },
    {
      command: "npx hub-export reload --tenant ACME_US_QA --country CA",
      does: "the same for one country, on the embedded default's database (.local/)",
    },
  ],
  exitCodes: {
    1: "refused (a run holds the lock, or waits to be resumed), an unknown tenant, or a database problem: the message names it",
  },
  async run(values, io) {
    if (!values.tenant) throw new UsageError("--tenant is required: a hub tenant id or code");
    const country = values.country?.toUpperCase();
    if (country !== undefined && !/^[A-Z]{2}$/.test(country))
      throw new UsageError(`--country must be an ISO 3166 alpha-2 country code, like DE, got '${cut(values.country)}'`);
    const config = loadFromOptions(values);
    const tenant = resolveTenant(config, values.tenant);
    return operatorAction(
      "reload",
      values,
      config,
      io,
      (client) =>
        reloadTenant(client, {
          stagingSchema: schemaOnly(config.stagingSchema),
          publishSchema: schemaOnly(config.publishSchema),
          clientName: config.clientName,
          jobName: config.jobName,
          idlDate: config.parameters.idl_date,
          tenant,
          country,
          actor: operatorActor(values),
          reason: values.reason,
        }),
      formatReload,
    );
  },
});
