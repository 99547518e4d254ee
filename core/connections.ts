/**
 * Records of the platform's connection-strings entity collection (procedure step 2; README, "Where each step of the procedure is carried out"): one
 * MessageQueue record per region in use, the PostgreSQL record named in credentials.ini, and the object-storage one.
 */
import type { StackConfig } from "./stackConfig";
import { Secret } from "./secret";
import { queueAuthUrl, queueOrganizationsUrl } from "./hubContract";
import { regionsInUse } from "./template";
import type { HubRegion } from "./regions";

export const CONNECTION_TYPES = { queue: "MessageQueue", database: "PostgreSQL", storage: "S3" } as const;

export interface ConnectionRecord {
  /** System Name: unique; the name written into tags, hub_destination and credentials.ini. */
  systemName: string;
  type: (typeof CONNECTION_TYPES)[keyof typeof CONNECTION_TYPES];
  description: string;
  url: string;
  username?: string;
  password?: Secret;
  /** Semicolon-separated key=value pairs, as the specification writes them. */
  additionalProperties: string;
  /** The region, for queue connections. */
  region?: HubRegion;
  /** PostgreSQL, verify-full: the CA bundle (PEM) the task verifies the server with. */
  sslRootCert?: string;
}

/** `authUrl=...;queueName=...` */
export function formatAdditionalProperties(props: Record<string, string>): string {
  return Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join(";");
}

export function parseAdditionalProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(";")) {
    if (!pair) continue;
    const eq = pair.indexOf("=");
    if (eq > 0) out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

export function queueConnectionRecords(config: StackConfig): ConnectionRecord[] {
  return regionsInUse(config).map((region) => {
    const q = config.queues[region]!;
    return {
      systemName: q.connectionName,
      type: CONNECTION_TYPES.queue,
      description: q.description ?? `Hub message queue for the ${region} region (${config.environment})`,
      url: queueOrganizationsUrl(q.baseUrl),
      username: q.clientAccessId,
      password: q.clientSecret,
      additionalProperties: formatAdditionalProperties({ authUrl: queueAuthUrl(q.baseUrl), queueName: q.queueName }),
      region,
    };
  });
}

/** `caPem`: the content of database.caBundle, read by the caller (core does no I/O). */
export function databaseConnectionRecord(config: StackConfig, caPem?: string): ConnectionRecord {
  const db = config.database;
  return {
    ...(caPem !== undefined && db.sslMode === "verify-full" ? { sslRootCert: caPem } : {}),
    systemName: db.connectionName,
    type: CONNECTION_TYPES.database,
    description: `Platform warehouse ${db.database} (${config.environment}), export task role`,
    url: `postgres://${db.host}:${db.port}/${db.database}`,
    username: db.task.username,
    password: db.task.password,
    additionalProperties: formatAdditionalProperties({ sslmode: db.sslMode }),
  };
}

export function storageConnectionRecord(config: StackConfig): ConnectionRecord {
  return {
    systemName: config.bucket.connectionName,
    type: CONNECTION_TYPES.storage,
    description: `Platform bucket ${config.bucket.name} (${config.environment})`,
    url: `s3://${config.bucket.name}/`,
    additionalProperties: "",
  };
}

export function connectionRecords(config: StackConfig, databaseCaPem?: string): ConnectionRecord[] {
  return [
    storageConnectionRecord(config),
    databaseConnectionRecord(config, databaseCaPem),
    ...queueConnectionRecords(config),
  ];
}

/** The stored form (a Secrets Manager secret string, or a local JSON file). It holds the secret: treat as secret. */
export function serializeConnectionRecord(record: ConnectionRecord): string {
  return JSON.stringify({
    systemName: record.systemName,
    type: record.type,
    description: record.description,
    url: record.url,
    ...(record.username !== undefined ? { username: record.username } : {}),
    ...(record.password !== undefined
      ? { password: record.password.reveal(`connection ${record.systemName} password`) }
      : {}),
    additionalProperties: record.additionalProperties,
    ...(record.sslRootCert !== undefined ? { sslRootCert: record.sslRootCert } : {}),
  });
}
