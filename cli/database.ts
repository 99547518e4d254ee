/**
 * The database a read-only command works on: `--database-url`, or else the embedded default's database in `.local/`
 * (`--dir`), started for the command when it is not running.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, type ClientConfig } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../local/embeddedPostgres";
import { UsageError, UserError } from "../core/errors";
import { maskSecret } from "../core/redact";
import type { Options } from "./command";
import { stackOptions } from "./stackOptions";
import type { StackConfig } from "../config/schema";
import { localPaths, type LocalPaths } from "../local/paths";
import { localDatabaseUrl } from "../local/database";

export const DATABASE_OPTIONS = {
  "database-url": {
    type: "string",
    value: "URL",
    description: "The warehouse to query, as postgres://USER:PASSWORD@HOST:PORT/DATABASE",
    defaultText: "the embedded default's database in --dir (started for the command, or joined while 'npm start -- --keep' runs)",
    example: "--database-url postgres://hub_export@db.example.com:5432/PLATDB",
  },
  dir: { type: "string", value: "PATH", description: "The embedded default's state folder, used without --database-url", defaultText: ".local/ in the project", example: "--dir /var/tmp/hub-export-demo" },
} as const satisfies Options;

export interface CommandDatabase {
  client: Client;
  /** The embedded default's folders when its database is used (no --database-url). */
  local?: LocalPaths;
  close(): Promise<void>;
}

export async function openCommandDatabase(values: { "database-url"?: string; dir?: string }): Promise<CommandDatabase> {
  let server: EmbeddedServer | undefined;
  let url = values["database-url"] === undefined ? undefined : databaseUrl(values["database-url"]);
  let paths: LocalPaths | undefined;
  if (!url) {
    paths = localPaths(values.dir ? path.resolve(values.dir) : undefined);
    if (!fs.existsSync(path.join(paths.postgres, "PG_VERSION"))) throw new UserError(`no local database in ${paths.postgres}: run 'npm start' first, or give --database-url`);
    // A running `npm start -- --keep` is joined: its server answers the command.
    server = await startEmbeddedPostgres({ dataDir: paths.postgres, persistent: true, join: true, owner: "hub-export (a read-only command)" });
    url = localDatabaseUrl(paths.connections, server.port);
  }
  // Its password (in the URL, or PGPASSWORD) is masked in everything the command shows (core/redact.ts).
  maskSecret(decodeURIComponent(new URL(url).password), process.env.PGPASSWORD);
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  try {
    await client.connect();
  } catch (err) {
    await server?.stop();
    const target = new URL(url);
    throw new UserError(`cannot connect to the database at ${target.host}${target.pathname}: ${(err as Error).message} (check --database-url, and that the database accepts connections from here)`);
  }
  return {
    client,
    local: paths,
    async close() {
      await client.end().catch(() => {});
      await server?.stop().catch(() => {});
    },
  };
}

/** A PostgreSQL URL, checked before connecting (the value is never echoed: it may hold a password). */
function databaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError("--database-url must be a URL like postgres://USER@HOST:5432/DATABASE; the value given is not a URL");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") throw new UsageError(`--database-url must be a postgres:// URL, got a ${url.protocol}// URL`);
  if (!url.hostname || url.pathname.length <= 1) throw new UsageError("--database-url must name a host and a database: postgres://USER@HOST:5432/DATABASE");
  return value;
}

/**
 * The options of an operator action on a stack's run data (reload, discard, retry): the stack, the database, who and
 * why. `reasonExample` is the command's own example of --reason.
 */
export function operatorOptions(examples: { reason: string }) {
  return {
    ...stackOptions,
    ...DATABASE_OPTIONS,
    user: { type: "string", value: "NAME", description: "With --stack/--file and no --database-url: the database login", defaultText: "hubExport:database.task.username", example: "--user platform_admin" },
    reason: { type: "string", value: "TEXT", description: "Why: recorded in the run history's detail", example: examples.reason },
    actor: { type: "string", value: "NAME", description: "Who: the run history's actor", defaultText: "<user>@<host>", example: "--actor alice" },
    json: { type: "boolean", description: "Print the result as one JSON object", example: "--json" },
  } as const satisfies Options;
}

export const OPERATOR_DATABASE_DETAILS =
  "The database: --database-url; else, with --stack or --file, the stack's own (hubExport:database host, port, database, TLS mode) as the task's login (or --user), the password from PGPASSWORD or ~/.pgpass as for psql; else the embedded default's (npm start, --dir).";

/** Who did it: --actor, or `<user>@<host>`. */
export function operatorActor(values: { actor?: string }): string {
  return values.actor ?? `${os.userInfo().username}@${os.hostname()}`;
}

/**
 * The database of an operator action: --database-url; else, with --stack or --file, the stack's own as the task's
 * login (or --user), the password from PGPASSWORD or ~/.pgpass; else the embedded default's. `startNow` is how to
 * start the next run there.
 */
export async function openOperatorDatabase(
  values: { "database-url"?: string; dir?: string; stack?: string; file?: string; user?: string },
  config: StackConfig,
  command: string,
): Promise<{ db: Pick<CommandDatabase, "client" | "close">; startNow: string }> {
  if (values["database-url"] && values.dir) throw new UsageError("give --database-url or --dir, not both");
  if (values["database-url"] || !(values.stack || values.file)) {
    // --database-url, or the embedded default's database (started for the command when it is not running).
    const db = await openCommandDatabase(values);
    return { db, startNow: values["database-url"] ? `npx hub-export run-now --stack ${values.stack ?? "<stack>"} --wait` : "npm start" };
  }
  const d = config.database;
  const ssl = d.sslMode === "disable" ? false : { rejectUnauthorized: d.sslMode === "verify-full" };
  // No password here: node-postgres takes PGPASSWORD or a ~/.pgpass entry, as psql does.
  const connection: ClientConfig = { host: d.host, port: d.port, database: d.database, user: values.user ?? d.task.username, ssl, application_name: `hub-export-${command}`, connectionTimeoutMillis: 15_000 };
  if (!process.env.PGPASSWORD && !fs.existsSync(process.env.PGPASSFILE ?? path.join(os.homedir(), ".pgpass"))) {
    throw new UserError(`no password for ${connection.user}@${d.host}: set PGPASSWORD or add a ~/.pgpass entry (the stack's 'pulumi config get --path hubExport:database.task.password')`);
  }
  const client = new Client(connection);
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  try {
    await client.connect();
  } catch (err) {
    throw new UserError(`cannot connect to the database: ${(err as Error).message}`);
  }
  return { db: { client, close: () => client.end().catch(() => {}) }, startNow: `npx hub-export run-now --stack ${values.stack ?? "<stack>"} --wait` };
}

/** A database refusal (permissions, a missing column) is its message, without a stack trace. */
export function databaseRefusal(what: string): (err: Error & { code?: string }) => never {
  return (err) => {
    if (typeof err.code === "string" && /^[0-9A-Z]{5}$/.test(err.code)) throw new UserError(`the database refused the ${what}: ${err.message}`);
    throw err;
  };
}
