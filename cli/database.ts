/**
 * The database a read-only command works on: `--database-url`, or else the embedded default's database in `.local/`
 * (`--dir`), started for the command when it is not running.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { startEmbeddedPostgres, type EmbeddedServer } from "../local/embeddedPostgres";
import { UserError } from "../core/errors";
import { localPaths, type LocalPaths } from "../local/paths";
import { localDatabaseUrl } from "../local/database";

export const DATABASE_OPTIONS = {
  "database-url": { type: "string" },
  /** The embedded default's state folder (default .local/), used without --database-url. */
  dir: { type: "string" },
} as const;

export const DATABASE_USAGE = "[--database-url URL | --dir PATH]";

export interface CommandDatabase {
  client: Client;
  /** The embedded default's folders when its database is used (no --database-url). */
  local?: LocalPaths;
  close(): Promise<void>;
}

export async function openCommandDatabase(values: { "database-url"?: string; dir?: string }): Promise<CommandDatabase> {
  let server: EmbeddedServer | undefined;
  let url = values["database-url"];
  let paths: LocalPaths | undefined;
  if (!url) {
    paths = localPaths(values.dir ? path.resolve(values.dir) : undefined);
    if (!fs.existsSync(path.join(paths.postgres, "PG_VERSION"))) throw new UserError(`no local database in ${paths.postgres}: run 'npm start' first, or give --database-url`);
    const dataDir = paths.postgres;
    server = await startEmbeddedPostgres({ dataDir, persistent: true }).catch((err: Error) => {
      throw new UserError(`cannot start the local database in ${dataDir} (is 'npm start -- --keep' running? then give --database-url): ${err.message.split("\n")[0]}`);
    });
    url = localDatabaseUrl(paths.connections, server.port);
  }
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
  } catch (err) {
    await server?.stop();
    throw new UserError(`cannot connect to the database: ${(err as Error).message}`);
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
