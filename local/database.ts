/** The embedded default's database URL, from the PostgreSQL record in the local connection store. */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../core/errors";

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
