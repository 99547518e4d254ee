/**
 * The database a read-only command works on: `--database-url`, or else the embedded default's database in `.local/`
 * (`--dir`), started for the command when it is not running.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../local/embeddedPostgres";
import { UsageError, UserError } from "../core/errors";
import { maskSecret } from "../core/redact";
import type { Options } from "./command";
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
