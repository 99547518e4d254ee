/**
 * PostgreSQL access shared by the SQL providers (config rows, baseline). Serialized provider code: providers/README.md.
 */
import type { Client, ClientConfig } from "pg";
import * as refusals from "./refusal";

const { refusal } = refusals;

export type SslMode = "disable" | "require" | "verify-full";

/** The login the providers use: the admin login from `hubExport:database.admin`. */
export interface PgConnection {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  sslMode: SslMode;
  /** verify-full: the CA certificates (PEM) to verify the server with, instead of Node's own store. */
  caPem?: string;
  /** verify-full: the name the server's certificate must carry, when `host` is a tunnel to it. */
  serverName?: string;
  /** Added to an authentication failure's message: where this login came from and what to run (SQL providers). */
  authFailureHint?: string;
}

/** The structured form or a `postgres://` URL (local mode and tests). */
export type PgTarget = PgConnection | string;

export function pgClientConfig(target: PgTarget): ClientConfig {
  const base: ClientConfig = {
    application_name: "hub-export-provisioning",
    connectionTimeoutMillis: 15_000,
    statement_timeout: 300_000,
  };
  if (typeof target === "string") return { ...base, connectionString: target };
  // libpq semantics: `require` encrypts without verifying the server; `verify-full` checks the chain (against the
  // configured CA bundle) and the server's name, which through a tunnel is the real endpoint's, not the tunnel's.
  let ssl: ClientConfig["ssl"] = false;
  if (target.sslMode === "require") ssl = { rejectUnauthorized: false };
  if (target.sslMode === "verify-full") {
    const tls = require("node:tls") as typeof import("node:tls");
    const name = target.serverName ?? target.host;
    ssl = {
      rejectUnauthorized: true,
      ...(target.caPem ? { ca: target.caPem } : {}),
      checkServerIdentity: (_host: string, cert: import("node:tls").PeerCertificate) =>
        tls.checkServerIdentity(name, cert),
    };
  }
  return {
    ...base,
    host: target.host,
    port: target.port,
    database: target.database,
    user: target.user,
    password: target.password,
    ssl,
  };
}

/**
 * `hubExport:database` as the stack config holds it (the fields the providers read). Validated by config/schema.ts in
 * the program; here it is only read, since serialized provider code cannot load the schema.
 */
export interface DatabaseConfigValues {
  host: string;
  port?: number;
  database: string;
  sslMode?: SslMode;
  caBundle?: string;
  provisioning?: { host: string; port?: number };
  admin: { username: string; password?: string };
}

/**
 * The database's name in state: `host:port/database` of the task endpoint. The SQL resources keep this label, never a
 * login (they get it from `configure`, providers/README.md), so a rotated password or another provisioning route
 * changes nothing in their state.
 */
export function databaseLabel(db: Pick<DatabaseConfigValues, "host" | "port" | "database">): string {
  return `${db.host}:${db.port ?? 5432}/${db.database}`;
}

/**
 * The admin login from `hubExport:database`: the provisioning endpoint (the task endpoint by default), the current
 * password, and for verify-full the CA bundle, read from `root` (the project folder), checked against the task
 * endpoint's name.
 */
export function provisioningLogin(db: DatabaseConfigValues, root: string): PgConnection {
  if (!db.admin?.password)
    throw refusal(
      "hubExport:database.admin.password is not set: pulumi config set --secret --path 'hubExport:database.admin.password'",
    );
  const sslMode = db.sslMode ?? "require";
  const login: PgConnection = {
    host: db.provisioning?.host ?? db.host,
    port: db.provisioning?.port ?? db.port ?? 5432,
    database: db.database,
    user: db.admin.username,
    password: db.admin.password,
    sslMode,
  };
  if (sslMode === "verify-full") {
    login.serverName = db.host;
    if (db.caBundle) {
      const fs = require("node:fs") as typeof import("node:fs");
      const path = require("node:path") as typeof import("node:path");
      const file = path.resolve(root, db.caBundle);
      try {
        login.caPem = fs.readFileSync(file, "utf8");
      } catch (err) {
        throw refusal(
          `hubExport:database.caBundle: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        );
      }
    }
  }
  return login;
}

/** Where a SQL provider's login comes from, for an authentication failure: what was used, and what to run. */
const PROVIDER_LOGIN_HINT =
  "the SQL resources log in as hubExport:database.admin as their provider was configured: by `pulumi up` and `preview` from the stack config, " +
  "by `pulumi destroy` and `pulumi refresh` from the config the last `pulumi up` recorded. After rotating the password (pulumi config set --secret), " +
  "run `pulumi up` first, or `pulumi refresh --run-program` / `pulumi destroy --run-program` (Pulumi CLI 3.231 or later)";

/**
 * A SQL provider's `configure`: keeps the admin login of `hubExport:database` in the config it is given (the program's
 * own checks came first), for this process.
 */
export function configureLogin(config: { get(key: string): string | undefined }): void {
  const text = config.get("hubExport:database");
  const db = text === undefined ? undefined : (JSON.parse(text) as DatabaseConfigValues);
  // What `configure` keeps, the login and the label of the database it reaches, on the process's global object, not on
  // the provider: serializing a provider (which captures the provider object) can never capture a login too.
  (globalThis as Record<symbol, unknown>)[Symbol.for("hub-export.warehouse-login")] = db && {
    label: databaseLabel(db),
    login: { ...provisioningLogin(db, process.cwd()), authFailureHint: PROVIDER_LOGIN_HINT },
  };
}

/**
 * The login a SQL resource runs with: the one `configure` read from the stack config; `what` names it in errors.
 * `target` is the resource's label (from its state for read and delete): it must name the configured database, so
 * that a row is never written to or deleted from another database than the one it was created in.
 */
export function currentLogin(target: string, what: string): PgConnection {
  const configured = (globalThis as Record<symbol, unknown>)[Symbol.for("hub-export.warehouse-login")] as
    { label: string; login: PgConnection } | undefined;
  if (!configured) {
    throw refusal(
      `${what}: no database login: the provider was not configured with the stack's hubExport:database (Pulumi CLI 3.140 or later passes the stack config to dynamic providers)`,
    );
  }
  if (configured.label !== target) {
    throw refusal(
      `${what}: belongs to database ${target}, but hubExport:database is ${configured.label}; put the old endpoint back for this 'up', or remove the resource from the state with 'pulumi state delete'`,
    );
  }
  return configured.login;
}

/**
 * Opens one client, runs `fn`, always closes it. A login refused (28P01 invalid_password, 28000 invalid authorization)
 * says where the login came from when the target does (authFailureHint).
 */
export async function withPgClient<T>(target: PgTarget, fn: (client: Client) => Promise<T>): Promise<T> {
  const { Client: PgClient } = require("pg") as typeof import("pg");
  const client = new PgClient(pgClientConfig(target));
  // A connection lost between statements must not crash the process: the next statement reports it.
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (err) {
    const code = (err as { code?: string }).code;
    const hint = typeof target === "string" ? undefined : target.authFailureHint;
    if (hint && (code === "28P01" || code === "28000"))
      throw Object.assign(new Error(`${(err as Error).message}: ${hint}`), { code });
    throw err;
  }
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
    throw new Error(
      `${what} ${JSON.stringify(name)} is not a safe SQL identifier (a letter or _, then letters, digits or _, at most 63)`,
    );
  }
  return `"${name.toLowerCase()}"`;
}

/** Where a connection points, without credentials: for messages. */
export function pgTargetLabel(target: PgTarget): string {
  if (typeof target !== "string") return `${target.host}:${target.port}/${target.database}`;
  try {
    const url = new URL(target);
    return `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "(unparsable connection string)";
  }
}
