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

export const SUPPLIED_VALUES: readonly SuppliedValue[] = [
  // The hub team: the hub side of each tenant and region.
  {
    key: "hubExport:hub",
    supplier: "hub",
    what: "each hub region's environment name and its ERS, CFG and HRSYS API URLs (the -ext- hosts)",
  },
  {
    key: "hubExport:hub.allowLoopback",
    supplier: "you",
    what: "only for a local stack: the embedded default may point at loopback",
  },
  {
    key: "hubExport:queues",
    supplier: "hub",
    what: "each region's queue connection: the broker's base URL, the queue name, the client access id and its secret",
  },
  {
    key: "hubExport:queues.<REGION>.connectionName",
    supplier: "you",
    what: "the queue connection record's System Name (`HUB_MQ_<REGION>_<ENV>`)",
  },
  { key: "hubExport:queues.<REGION>.description", supplier: "you", what: "the queue connection record's description" },
  {
    key: "hubExport:hubTenants",
    supplier: "hub",
    what: "each hub tenant's UUID, code, hub region, client id and client secret",
  },
  {
    key: "hubExport:hubTenants[].routingRules",
    supplier: "hub",
    what: "a custom routing rule set, when the tenant's data flow is not the specification's",
  },
  {
    key: "hubExport:hubContract",
    supplier: "hub",
    what: "the assumed calls' paths, when the hub's differ ([hub-contract.md](hub-contract.md))",
  },
  // The DBA: the warehouse.
  {
    key: "hubExport:database",
    supplier: "dba",
    what:
      "the warehouse: host, port, database, TLS mode, and a tunnel or bastion endpoint for the machine that runs " +
      "`pulumi up`",
  },
  {
    key: "hubExport:database.caBundle",
    supplier: "dba",
    what: "the CA bundle that signs the server's certificate (for RDS, AWS's regional bundle)",
  },
  {
    key: "hubExport:database.admin",
    supplier: "dba",
    what: "the admin login that applies the baseline and creates the task's role: its name and password",
  },
  {
    key: "hubExport:database.connectionName",
    supplier: "platform",
    what: "the System Name of the warehouse's connection record, shared by the environment's pipelines",
  },
  {
    key: "hubExport:database.task",
    supplier: "you",
    what: "the task's login role, which the stack creates: a name that names the client, and a password you choose",
  },
  {
    key: "hubExport:publishSchema",
    supplier: "dba",
    what: "`<database>.<schema>` of the publish schema the task reads",
  },
  {
    key: "hubExport:stagingSchema",
    supplier: "dba",
    what: "`<database>.<schema>` of the staging schema the stack creates its tables in",
  },
  // The network team: where the task runs.
  {
    key: "hubExport:network",
    supplier: "network",
    what: "the private subnets (with a NAT gateway or VPC endpoints) and the task's security group",
  },
  // The AWS account owners.
  { key: "aws:allowedAccountIds", supplier: "aws", what: "the account the stack deploys to" },
  { key: "aws:region", supplier: "aws", what: "the region of the stack's resources" },
  { key: "aws:profile", supplier: "aws", what: "the named profile (or SSO session) of the deploying identity" },
  { key: "hubExport:image.pullAccounts", supplier: "aws", what: "qa only: the accounts that run qa's images (prod's)" },
  {
    key: "hubExport:task.clusterArn",
    supplier: "aws",
    what: "an existing ECS cluster to run in, instead of the stack's own",
  },
  // The platform team: the platform environment the stack joins.
  {
    key: "hubExport:bucket",
    supplier: "platform",
    what: "the platform bucket (adopted with create: false), its connection name and its KMS key",
  },
  {
    key: "hubExport:platTenants",
    supplier: "platform",
    what:
      "the client's platform regions: codebase, gblOrUs, secure view source, connector id, and the hub tenant " +
      "each feeds",
  },
  {
    key: "hubExport:cls",
    supplier: "platform",
    what: "the HR system's exports of the CLS business objects ([cls/README.md](../cls/README.md))",
  },
  {
    key: "hubExport:scriptsRelease",
    supplier: "platform",
    what: "a vendor `hub_python_scripts.zip`, when the scripts do not come with a platform release",
  },
  // You: the stack's own choices.
  { key: "hubExport:environment", supplier: "you", what: "the environment label (QA, PROD)" },
  { key: "hubExport:clientName", supplier: "you", what: "the client's name, in upper case" },
  { key: "hubExport:jobName", supplier: "you", what: "the pipeline's job name, ending in the environment" },
  { key: "hubExport:parameters", supplier: "you", what: "the pipeline parameters (defaults: the specification's)" },
  { key: "hubExport:connectionStore", supplier: "you", what: "the Secrets Manager prefix of the connection records" },
  { key: "hubExport:schedule", supplier: "you", what: "when the export runs" },
  { key: "hubExport:task", supplier: "you", what: "the task's CPU, memory and log retention" },
  {
    key: "hubExport:image",
    supplier: "you",
    what: "prod only: the image qa tested, by digest (qa's stack output `image`)",
  },
  {
    key: "hubExport:concurrency",
    supplier: "you",
    what: "requests in flight per API and region (defaults are the tested ones)",
  },
  {
    key: "hubExport:alerts",
    supplier: "you",
    what: "who is told when a run does not complete: email addresses, https webhooks (secrets)",
  },
];

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
