/**
 * What the probe checks: `run --probe` takes exactly what a run loads; `probe --stack` takes the stack config's tenants
 * and hub URLs with the secrets of the deployed scripts folder and connection store (no database needed).
 */
import type { StackConfig } from "../../core/stackConfig";
import { hubApiConfigRows } from "../../core/rows";
import { HUB_REGIONS } from "../../core/regions";
import { distinctHubTenants, type RunConfiguration } from "../load/configuration";
import { credentialsStringOf, loadScriptFiles } from "../load/scriptFiles";
import { openConnectionStore } from "../connections/store";
import { queueEndpoint } from "../connections/record";
import { queueAuthUrl, queueOrganizationsUrl } from "../../core/hubContract";
import { untimed, type CheckResult } from "./checks";
import type { ProbeTargets } from "./probe";

export function targetsFromRun(config: RunConfiguration): ProbeTargets {
  const queues = new Map(config.tenants.map((t) => [t.hubDestination, { region: t.region, endpoint: t.queue }]));
  const p = config.definition.parameters;
  return {
    contract: config.definition.hubContract,
    queues: [...queues.values()],
    tenants: distinctHubTenants(config.tenants).map((t) => ({
      hubTenantId: t.hubTenantId,
      hubTenantCode: t.hubTenantCode,
      apis: t.apis,
      credentialsString: t.credentialsString,
    })),
    systemCode: p.system_code,
    jobName: p.job_name,
  };
}

/** The stack's targets; what cannot be found (a record, a credentials string) is a failed check, not an error. */
export async function targetsFromStack(
  config: StackConfig,
  inputs: { scripts: string; connections: string },
): Promise<{ targets: ProbeTargets; problems: CheckResult[] }> {
  const problems: CheckResult[] = [];
  const fail = (endpoint: string, check: string, result: string) =>
    problems.push(untimed(endpoint, check, result, "FAIL"));
  const withoutCredentials = await awsCredentialsProblem(inputs);
  if (withoutCredentials) {
    // The secrets are out of reach: say how to give credentials, and still check every host the stack names.
    fail("AWS credentials", "credentials", withoutCredentials);
    return { targets: hostsOnly(config), problems: [...problems, ...notAuthenticated(config)] };
  }
  const store = openConnectionStore(inputs.connections);
  const queues: ProbeTargets["queues"] = [];
  try {
    for (const region of HUB_REGIONS) {
      const q = config.queues[region];
      if (!q) continue;
      const record = await store.get(q.connectionName);
      if (!record)
        fail(
          `queue ${region} (${q.connectionName})`,
          "connection record",
          `not in ${store.describe} (pulumi up creates it)`,
        );
      else queues.push({ region, endpoint: queueEndpoint(record) });
    }
  } finally {
    store.close();
  }
  const credentials = (await loadScriptFiles(inputs.scripts)).tenantCredentials;
  const apiRows = hubApiConfigRows(config);
  const tenants: ProbeTargets["tenants"] = [];
  for (const { hubTenantId, hubTenantCode } of config.hubTenants) {
    const found = credentialsStringOf(credentials, hubTenantId);
    if ("problem" in found) {
      fail(`tenant ${hubTenantCode}`, "credentials string", `${hubTenantId}: ${found.problem} (${inputs.scripts})`);
      continue;
    }
    const apis = Object.fromEntries(
      apiRows
        .filter((r) => r.key.hub_tenant_id === hubTenantId)
        .map((r) => [r.key.hub_api_name, String(r.values.hub_api_url)]),
    );
    tenants.push({ hubTenantId, hubTenantCode, apis, credentialsString: found.credentialsString });
  }
  return {
    targets: {
      contract: config.hubContract,
      queues,
      tenants,
      systemCode: config.parameters.system_code,
      jobName: config.jobName,
    },
    problems,
  };
}

/** Why the deployed stores cannot be read (no AWS credentials found), when `inputs` are AWS stores. */
async function awsCredentialsProblem(inputs: { scripts: string; connections: string }): Promise<string | undefined> {
  const where: string[] = [];
  if (inputs.scripts.startsWith("s3://")) where.push(`tenant_credentials.txt in ${inputs.scripts}`);
  if (inputs.connections.startsWith("secretsmanager:")) where.push(`the queue records in ${inputs.connections}`);
  if (!where.length) return undefined;
  const aws = await import("../aws/credentials.js");
  const missing = await aws.missingAwsCredentials();
  if (!missing) return undefined;
  const unread = `no AWS credentials (${missing}), so the secrets (${where.join(", ")}) cannot be read`;
  return `${unread}: ${aws.AWS_CREDENTIALS_HOWTO}; until then only DNS, TCP and TLS of each host are checked`;
}

/** The stack's hosts, with nothing to authenticate with: the queue brokers' and each tenant's API URLs. */
function hostsOnly(config: StackConfig): ProbeTargets {
  const bases = HUB_REGIONS.flatMap((region) => (config.queues[region] ? [config.queues[region].baseUrl] : []));
  const queues = bases.flatMap((base) => [queueAuthUrl(base), queueOrganizationsUrl(base)]);
  const apis = hubApiConfigRows(config).map((r) => String(r.values.hub_api_url));
  const hosts = [...queues, ...apis];
  const { hubContract: contract, jobName } = config;
  return { contract, queues: [], tenants: [], hosts, systemCode: config.parameters.system_code, jobName };
}

/** One line per endpoint whose authentication was not checked. */
function notAuthenticated(config: StackConfig): CheckResult[] {
  const result = "not checked: needs its secret from the deployed stores (AWS credentials)";
  const skip = (endpoint: string, check: string) => untimed(endpoint, check, result, "skip");
  const regions = HUB_REGIONS.filter((region) => config.queues[region]);
  const queues = regions.map((region) => [region, config.queues[region]!.connectionName]);
  return [
    ...queues.map(([region, name]) => skip(`queue ${region} (${name})`, "authorize")),
    ...config.hubTenants.map((t) => skip(`tenant ${t.hubTenantCode}`, "credentials string")),
  ];
}
