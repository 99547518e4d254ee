/** The embedded default's database URL, from the PostgreSQL record in the local connection store. */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../core/errors";
import { percentDecoded } from "../core/urlSecrets";

/** `port` replaces the recorded one: the embedded server takes a free port at each start. */
export function localDatabaseUrl(connectionsDir: string, port?: number): string {
  const files = fs.existsSync(connectionsDir) ? fs.readdirSync(connectionsDir).filter((f) => f.endsWith(".json")) : [];
  for (const file of files) {
    const full = path.join(connectionsDir, file);
    let record: { type?: unknown; url: string; username: string; password: string };
    try {
      record = JSON.parse(fs.readFileSync(full, "utf8")) as typeof record;
    } catch (err) {
      // Written by another tool, or edited by hand: never a bug of ours.
      throw new UserError(
        `${full}: not a connection record (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); correct it, or 'npm start' writes it again`,
      );
    }
    if (record?.type !== "PostgreSQL") continue;
    const url = URL.canParse(record.url) ? new URL(record.url) : undefined;
    // Edited by hand: named by its file, the URL not shown (a hand edit may have put the password in it).
    if (!url || percentDecoded(url.pathname) === undefined)
      throw new UserError(
        `${full}: its url is not a postgres:// URL with a well-formed database name; correct it, or 'npm start' writes it again`,
      );
    url.username = encodeURIComponent(record.username);
    url.password = encodeURIComponent(record.password);
    if (port !== undefined) url.port = String(port);
    return url.toString();
  }
  throw new UserError(
    `no local database connection in ${connectionsDir}: run 'npm start' first, or give --database-url`,
  );
}
