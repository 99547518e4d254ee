/** The embedded default's database URL, from the PostgreSQL record in the local connection store. */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../core/errors";
import { startEmbeddedPostgres, type EmbeddedServer } from "./embeddedPostgres";
import { localPaths } from "./paths";

/** `port` replaces the recorded one: the embedded server takes a free port at each start. */
export function localDatabaseUrl(connectionsDir: string, port?: number): string {
  const files = fs.existsSync(connectionsDir) ? fs.readdirSync(connectionsDir).filter((f) => f.endsWith(".json")) : [];
  for (const file of files) {
    const record = JSON.parse(fs.readFileSync(path.join(connectionsDir, file), "utf8"));
    if (record.type !== "PostgreSQL") continue;
    const url = new URL(record.url);
    url.username = encodeURIComponent(record.username);
    url.password = encodeURIComponent(record.password);
    if (port !== undefined) url.port = String(port);
    return url.toString();
  }
  throw new UserError(`no local database connection in ${connectionsDir}: run 'npm start' first, or give --database-url`);
}

/**
 * The embedded default's database for a command run outside `npm start` (status, reload): started on its data folder
 * for the command, with the task's login URL. `dir` is the state folder (default .local/).
 */
export async function startLocalDatabase(dir?: string): Promise<{ url: string; server: EmbeddedServer }> {
  const paths = localPaths(dir ? path.resolve(dir) : undefined);
  if (!fs.existsSync(path.join(paths.postgres, "PG_VERSION"))) throw new UserError(`no local database in ${paths.postgres}: run 'npm start' first, or give --database-url`);
  const server = await startEmbeddedPostgres({ dataDir: paths.postgres, persistent: true }).catch((err: Error) => {
    throw new UserError(`cannot start the local database in ${paths.postgres} (is 'npm start -- --keep' running? then give --database-url): ${err.message.split("\n")[0]}`);
  });
  try {
    return { url: localDatabaseUrl(paths.connections, server.port), server };
  } catch (err) {
    await server.stop().catch(() => {});
    throw err;
  }
}
