/**
 * PostgreSQL access shared by the SQL providers (config rows, baseline).
 *
 * These functions also run inside Pulumi's dynamic-provider host, which receives them as serialized closures with no
 * TypeScript loader: they may use only node builtins and npm packages, `require`d inside the function body, and
 * other functions of this file. Provider files alias them into a local const (never `pg_1.withPgClient`), so that the
 * serializer captures the functions and not this module.
 */
import type { Client, ClientConfig } from "pg";

export type SslMode = "disable" | "require" | "verify-full";

/** The login the providers use: the warehouse owner from `hubExport:database.admin`. */
export interface PgConnection {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  sslMode: SslMode;
}

/** The structured form (Pulumi inputs) or a `postgres://` URL (local mode and tests). */
export type PgTarget = PgConnection | string;

export function pgClientConfig(target: PgTarget): ClientConfig {
  const base: ClientConfig = { application_name: "hub-export-provisioning", connectionTimeoutMillis: 15_000, statement_timeout: 300_000 };
  if (typeof target === "string") return { ...base, connectionString: target };
  // libpq semantics: `require` encrypts without verifying the server; `verify-full` checks the chain and host name
  // against Node's CA store (add the RDS bundle with NODE_EXTRA_CA_CERTS).
  const ssl = target.sslMode === "disable" ? false : { rejectUnauthorized: target.sslMode === "verify-full" };
  return { ...base, host: target.host, port: target.port, database: target.database, user: target.user, password: target.password, ssl };
}

/** Opens one client, runs `fn`, always closes it. */
export async function withPgClient<T>(target: PgTarget, fn: (client: Client) => Promise<T>): Promise<T> {
  const { Client: PgClient } = require("pg") as typeof import("pg");
  const client = new PgClient(pgClientConfig(target));
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs `fn` in a transaction: committed when it resolves, rolled back when it throws. */
export async function inPgTransaction<T>(client: Client, fn: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await fn();
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

/**
 * A validated, quoted identifier. The baseline creates every name unquoted, so PostgreSQL folds it to lower case:
 * quoting the lower-case form addresses the same object and rules out injection.
 */
export function quoteIdent(name: string, what = "identifier"): string {
  if (typeof name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new Error(`${what} ${JSON.stringify(name)} is not a safe SQL identifier (a letter or _, then letters, digits or _, at most 63)`);
  }
  return `"${name.toLowerCase()}"`;
}

/** Where a connection points, without credentials: for messages and for diffs that must ignore a rotated password. */
export function pgTargetLabel(target: PgTarget): string {
  if (typeof target !== "string") return `${target.host}:${target.port}/${target.database}`;
  try {
    const url = new URL(target);
    return `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "(unparsable connection string)";
  }
}
