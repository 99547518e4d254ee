/** The warehouse connection: a small pool, opened from the PostgreSQL connection record. */
import { Pool, type ClientBase, type PoolClient } from "pg";
import { UserError } from "../../core/errors";
import type { DatabaseSettings } from "../connections/record";

export type { PoolClient };

/** Sessions: the run lock, up to 4 extract parts, the publish reader, and spares. */
const POOL_SIZE = 10;
/** Sessions of the acknowledgement writer (phases/statusWriter.ts): its lanes, shared by outcomes and ERS. */
export const ACK_POOL_SIZE = 4;
/**
 * The acknowledgement writers' sessions commit asynchronously: a commit is visible to the next run at once, which is
 * all a killed task needs; waiting for the WAL flush too would only guard against a database crash, after which a
 * few acknowledgements are sent again (same messageIds). Every other session commits as the server is configured.
 */
const ASYNCHRONOUS_COMMIT = "-c synchronous_commit=off";

export interface OpenOptions {
  /** Sessions at most (POOL_SIZE). */
  max?: number;
  asynchronousCommit?: boolean;
}

/** PostgreSQL 14+: a backend notices within a second that a killed task is gone, and stops its query. */
const CHECK_CLIENT = "-c client_connection_check_interval=1000";

export async function openDatabase(connection: string, settings: DatabaseSettings, open: OpenOptions = {}): Promise<Pool> {
  const max = open.max ?? POOL_SIZE;
  const options = (check: boolean) => [check ? CHECK_CLIENT : "", open.asynchronousCommit ? ASYNCHRONOUS_COMMIT : ""].filter(Boolean).join(" ") || undefined;
  try {
    return await tryOpen(settings, max, options(true));
  } catch (err) {
    // An older server does not know the setting (42704): go without it.
    if ((err as { code?: string }).code === "42704") {
      try {
        return await tryOpen(settings, max, options(false));
      } catch (again) {
        err = again;
      }
    }
    const e = err as NodeJS.ErrnoException & { code?: string };
    throw new UserError(`cannot connect to the database of connection ${connection} (${settings.host}:${settings.port}/${settings.database}): ${e.code ? `${e.code}: ` : ""}${e.message}`);
  }
}

async function tryOpen(settings: DatabaseSettings, max: number, options: string | undefined): Promise<Pool> {
  const pool = new Pool({
    host: settings.host,
    port: settings.port,
    database: settings.database,
    user: settings.user,
    password: settings.password,
    ssl: settings.ssl,
    max,
    connectionTimeoutMillis: 15_000,
    idleTimeoutMillis: 60_000,
    application_name: "hub-export",
    options,
  });
  // A dropped idle connection must not crash the process; the query that needs it reports the error.
  pool.on("error", () => {});
  try {
    const client = await pool.connect();
    client.release();
    return pool;
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

/** Runs `work` in one database transaction on `client`. */
export async function inTransaction<T>(client: ClientBase, work: () => Promise<T>, begin = "BEGIN"): Promise<T> {
  await client.query(begin);
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}
