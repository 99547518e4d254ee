/**
 * A record of the connection-strings entity collection as stored (core/connections.ts serializeConnectionRecord),
 * and what the task makes of it: PostgreSQL connection settings, or a queue endpoint.
 */
import { z } from "zod";
import { CONNECTION_TYPES, parseAdditionalProperties } from "../../core/connections";
import { UserError } from "../../core/errors";
import { maskSecret } from "../../core/redact";
import { shownUrl } from "../../core/hubEndpoints";
import { percentDecoded, secretInQuery, secretParameter } from "../../core/urlSecrets";

export const storedConnectionSchema = z.object({
  systemName: z.string().min(1),
  type: z.string().min(1),
  description: z.string().optional(),
  url: z.string().min(1),
  username: z.string().optional(),
  password: z.string().optional(),
  additionalProperties: z.string().default(""),
  /** PostgreSQL with sslmode verify-full: the PEM of the CA that signs the server's certificate. */
  sslRootCert: z.string().optional(),
});
export type StoredConnection = z.infer<typeof storedConnectionSchema>;

/** Parses a stored record; errors name the connection and the field, never the values. */
export function parseStoredConnection(text: string, name: string, where: string): StoredConnection {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new UserError(`connection ${name} (${where}): not valid JSON`);
  }
  const parsed = storedConnectionSchema.safeParse(doc);
  if (!parsed.success) {
    throw new UserError([
      `connection ${name} (${where}): invalid record`,
      ...parsed.error.issues.map((i) => `  ${i.path.join(".") || "(record)"}: ${i.message}`),
    ]);
  }
  // The password (a database's, or a queue's client secret) is masked in everything the process shows.
  maskSecret(parsed.data.password);
  if (parsed.data.systemName !== name)
    throw new UserError(`connection ${name} (${where}): the record's systemName is '${parsed.data.systemName}'`);
  return parsed.data;
}

export interface DatabaseSettings {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** `ca`: the record's CA bundle, when it has one (verify-full); Node's own store otherwise. */
  ssl: false | { rejectUnauthorized: boolean; ca?: string };
}

/** A PostgreSQL record: url postgres://host:port/db, username, password, additionalProperties sslmode=... */
export function databaseSettings(record: StoredConnection): DatabaseSettings {
  const fail = (message: string): never => {
    throw new UserError(`database connection ${record.systemName}: ${message}`);
  };
  if (record.type !== CONNECTION_TYPES.database)
    fail(`has type '${record.type}', expected ${CONNECTION_TYPES.database}`);
  let url: URL;
  try {
    url = new URL(record.url);
  } catch {
    return fail("url is not a URL (expected postgres://host:port/database)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") fail("url must start with postgres://");
  const login = "the login is the record's username and password";
  if (url.username || url.password)
    fail(`url ${shownUrl(record.url)} carries credentials (user:password@ before the host): remove them; ${login}`);
  const secret = secretParameter(url);
  if (secret) fail(`url ${shownUrl(record.url)} ${secretInQuery(secret, login)}`);
  const database = percentDecoded(url.pathname.replace(/^\//, ""));
  if (database === undefined)
    return fail(
      "url has a malformed %-escape in its database name (a % must be followed by two hex digits of UTF-8, %25 for % itself)",
    );
  if (!url.hostname || !database) fail("url must name a host and a database: postgres://host:port/database");
  if (!record.username || !record.password) fail("username and password are required");
  const sslmode = parseAdditionalProperties(record.additionalProperties).sslmode ?? "require";
  const ssl: DatabaseSettings["ssl"] =
    sslmode === "disable"
      ? false
      : sslmode === "verify-full" || sslmode === "verify-ca"
        ? { rejectUnauthorized: true }
        : sslmode === "require" || sslmode === "prefer"
          ? { rejectUnauthorized: false }
          : fail(`unknown sslmode '${sslmode}'`);
  if (ssl && ssl.rejectUnauthorized && record.sslRootCert) ssl.ca = record.sslRootCert;
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : 5432,
    database,
    user: record.username!,
    password: record.password!,
    ssl,
  };
}

export interface QueueEndpoint {
  connection: string;
  /** `{base}/api/v1/organizations/` */
  organizationsUrl: string;
  authUrl: string;
  queueName: string;
  clientId: string;
  clientSecret: string;
}

/** A MessageQueue record: url = organizations API, authUrl and queueName in additionalProperties. */
export function queueEndpoint(record: StoredConnection): QueueEndpoint {
  const problems: string[] = [];
  if (record.type !== CONNECTION_TYPES.queue)
    problems.push(`has type '${record.type}', expected ${CONNECTION_TYPES.queue}`);
  const props = parseAdditionalProperties(record.additionalProperties);
  if (!props.authUrl) problems.push("additional properties lack authUrl");
  if (!props.queueName) problems.push("additional properties lack queueName");
  if (!record.username || !record.password)
    problems.push("username (client access id) and password (client secret) are required");
  for (const [what, value] of [
    ["url", record.url],
    ["authUrl", props.authUrl],
  ] as const) {
    if (value && !/^https?:\/\//.test(value)) problems.push(`${what} is not an http(s) URL`);
  }
  if (problems.length > 0)
    throw new UserError([`queue connection ${record.systemName}: invalid`, ...problems.map((p) => `  ${p}`)]);
  return {
    connection: record.systemName,
    organizationsUrl: record.url,
    authUrl: props.authUrl,
    queueName: props.queueName,
    clientId: record.username!,
    clientSecret: record.password!,
  };
}
