/**
 * Who usually supplies each stack config value: the one source of truth behind `hub-export validate`'s list of what
 * is left to set (grouped by supplier) and docs/pulumi.md's "What you need, and from whom" (checked against this by
 * test/config/suppliers.test.ts). A value is matched by its key with list positions and region names taken out
 * (`hubExport:hubTenants[2].clientSecret` → `hubExport:hubTenants[].clientSecret`); the longest matching key wins.
 */

export const SUPPLIERS = {
  hub: "the hub team",
  dba: "the warehouse's DBA",
  network: "the network team",
  aws: "the AWS account owners",
  platform: "the platform team",
  you: "your own team",
} as const;

export type SupplierId = keyof typeof SUPPLIERS;

export interface SuppliedValue {
  /** The key, `[]` for any list position, `<REGION>` for a hub region, `<API>` for ERS, CFG or HRSYS. */
  key: string;
  supplier: SupplierId;
  /** What it is, for the docs. */
  what: string;
}

/** Per supplier, in the docs' order: each key (as SuppliedValue.key) and what it is. */
const KEYS_BY_SUPPLIER: Record<SupplierId, Record<string, string>> = {
  hub: {
    "hubExport:hub": "each hub region's environment name and its ERS, CFG and HRSYS API URLs (the -ext- hosts)",
    "hubExport:queues":
      "each region's queue connection: the broker's base URL, the queue name, the client access id and its secret",
    "hubExport:hubTenants": "each hub tenant's UUID, code, hub region, client id and client secret",
    "hubExport:hubTenants[].routingRules":
      "a custom routing rule set, when the tenant's data flow is not the specification's",
    "hubExport:hubContract": "the assumed calls' paths, when the hub's differ ([hub-contract.md](hub-contract.md))",
  },
  dba: {
    "hubExport:database":
      "the warehouse: host, port, database, TLS mode, and a tunnel or bastion endpoint for the machine that runs `pulumi up`",
    "hubExport:database.caBundle": "the CA bundle that signs the server's certificate (for RDS, AWS's regional bundle)",
    "hubExport:database.admin":
      "the admin login that applies the baseline and creates the task's role: its name and password",
    "hubExport:publishSchema": "`<database>.<schema>` of the publish schema the task reads",
    "hubExport:stagingSchema": "`<database>.<schema>` of the staging schema the stack creates its tables in",
  },
  network: {
    "hubExport:network": "the private subnets (with a NAT gateway or VPC endpoints) and the task's security group",
  },
  aws: {
    "aws:allowedAccountIds": "the account the stack deploys to",
    "aws:region": "the region of the stack's resources",
    "aws:profile": "the named profile (or SSO session) of the deploying identity",
    "hubExport:image.pullAccounts": "qa only: the accounts that run qa's images (prod's)",
    "hubExport:task.clusterArn": "an existing ECS cluster to run in, instead of the stack's own",
  },
  platform: {
    "hubExport:database.connectionName":
      "the System Name of the warehouse's connection record, shared by the environment's pipelines",
    "hubExport:bucket": "the platform bucket (adopted with create: false), its connection name and its KMS key",
    "hubExport:platTenants":
      "the client's platform regions: codebase, gblOrUs, secure view source, connector id, and the hub tenant each feeds",
    "hubExport:cls": "the HR system's exports of the CLS business objects ([cls/README.md](../cls/README.md))",
    "hubExport:scriptsRelease":
      "a vendor `hub_python_scripts.zip`, when the scripts do not come with a platform release",
  },
  you: {
    "hubExport:hub.allowLoopback": "only for a local stack: the embedded default may point at loopback",
    "hubExport:queues.<REGION>.connectionName": "the queue connection record's System Name (`HUB_MQ_<REGION>_<ENV>`)",
    "hubExport:queues.<REGION>.description": "the queue connection record's description",
    "hubExport:database.task":
      "the task's login role, which the stack creates: a name that names the client, and a password you choose",
    "hubExport:environment": "the environment label (QA, PROD)",
    "hubExport:clientName": "the client's name, in upper case",
    "hubExport:jobName": "the pipeline's job name, ending in the environment",
    "hubExport:parameters": "the pipeline parameters (defaults: the specification's)",
    "hubExport:connectionStore": "the Secrets Manager prefix of the connection records",
    "hubExport:schedule": "when the export runs",
    "hubExport:task": "the task's CPU, memory and log retention",
    "hubExport:image": "prod only: the image qa tested, by digest (qa's stack output `image`)",
    "hubExport:concurrency": "requests in flight per API and region (defaults are the tested ones)",
    "hubExport:alerts": "who is told when a run does not complete: email addresses, https webhooks (secrets)",
  },
};

export const SUPPLIED_VALUES: readonly SuppliedValue[] = Object.entries(KEYS_BY_SUPPLIER).flatMap(([supplier, keys]) =>
  Object.entries(keys).map(([key, what]) => ({ key, supplier: supplier as SupplierId, what })),
);

/** `hubExport:hubTenants[2].clientSecret` → `hubExport:hubTenants[].clientSecret`; regions and APIs by name. */
export function valuePattern(key: string): string {
  return key
    .replace(/\[\d+\]/g, "[]")
    .replace(/\.(US|EU|APAC)(?=\.|$)/g, ".<REGION>")
    .replace(/\.apis\.(ERS|CFG|HRSYS)$/, ".apis.<API>");
}

/** The entry that says who supplies `key`: the longest one it falls under. */
export function suppliedValue(key: string): SuppliedValue | undefined {
  const pattern = valuePattern(key);
  const under = (entry: SuppliedValue) =>
    pattern === entry.key || pattern.startsWith(`${entry.key}.`) || pattern.startsWith(`${entry.key}[`);
  return SUPPLIED_VALUES.filter(under).sort((a, b) => b.key.length - a.key.length)[0];
}

/**
 * Who supplies a key: a key in the project's namespace (`hub-export:x`, set without `hubExport:`) is yours to move.
 */
export function supplierOf(key: string): SupplierId {
  if (!key.startsWith("hubExport:") && !key.startsWith("aws:")) return "you";
  return suppliedValue(key)?.supplier ?? "you";
}
