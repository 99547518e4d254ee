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

export async function openDatabase(
  connection: string,
  settings: DatabaseSettings,
  open: OpenOptions = {},
): Promise<Pool> {
  const max = open.max ?? POOL_SIZE;
  const options = (check: boolean) =>
    [check ? CHECK_CLIENT : "", open.asynchronousCommit ? ASYNCHRONOUS_COMMIT : ""].filter(Boolean).join(" ") ||
    undefined;
  try {
    return await tryOpen(settings, max, options(true));
  } catch (err) {
    let failure = err;
    // An older server does not know the setting (42704): go without it.
    if ((err as { code?: string }).code === "42704") {
      try {
        return await tryOpen(settings, max, options(false));
      } catch (again) {
        failure = again;
      }
    }
    const e = failure as NodeJS.ErrnoException & { code?: string };
    throw new UserError(
      `cannot connect to the database of connection ${connection} (${settings.host}:${settings.port}/${settings.database}): ${e.code ? `${e.code}: ` : ""}${e.message}`,
    );
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

/**
 * SQLSTATE classes of a session that is gone: 08 (connection exception), 57P (operator intervention: the server shut
 * down or crashed, cannot connect now, the database was dropped).
 */
const LOST_SQLSTATE = /^(08|57P)[0-9A-Z]{2,3}$/;
/** Socket errors of a connection that broke or could not be opened. */
const LOST_SOCKET = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);
/** node-postgres's own words for a connection that ended or never came (they carry no code). */
const LOST_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/;

/**
 * Why the warehouse connection is gone, when `err` says it is: "warehouse connection lost: 57P01 terminating
 * connection due to administrator command"; undefined for any other error (a refused statement, a timeout).
 */
export function connectionLost(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === "string" ? e.code : undefined;
  const message = String(e?.message ?? err).split("\n")[0];
  if (code && (LOST_SQLSTATE.test(code) || LOST_SOCKET.has(code)))
    return `warehouse connection lost: ${code} ${message}`;
  if (LOST_MESSAGE.test(message)) return `warehouse connection lost: ${message}`;
  return undefined;
}

/**
 * Every session checked out of `pool` gets an 'error' listener for as long as it is out: a session lost then (the
 * server restarted, an administrator ended it) calls `onLost` with the reason, once per error. Without a listener a
 * checked-out client's 'error' crashes the process; idle sessions are the pool's (its 'error' event).
 */
export function watchSessions(pool: Pool, onLost: (reason: string) => void): void {
  const watched = new WeakSet<PoolClient>();
  const out = new WeakSet<PoolClient>();
  pool.on("acquire", (client) => {
    out.add(client);
    if (watched.has(client)) return;
    watched.add(client);
    // The server's FATAL message (57P01 ...) says why it closed the session; it goes to the statement running then,
    // and the client's 'error' says only "Connection terminated unexpectedly".
    let fatal: string | undefined;
    client.connection.on("errorMessage", (msg: { severity?: string }) => {
      if (msg.severity === "FATAL") fatal ??= connectionLost(msg);
    });
    client.on("error", (err) => {
      if (out.has(client))
        onLost(fatal ?? connectionLost(err) ?? `warehouse connection lost: ${err.message.split("\n")[0]}`);
    });
  });
  pool.on("release", (_err, client) => out.delete(client));
}

/**
 * Runs `work` (which takes a session of its own), and runs it again on a fresh session while it fails for a lost
 * connection, until `until()` (a time in ms): after a warehouse restart, what a stopping run still has to record.
 */
export async function whileLost<T>(work: () => Promise<T>, until: () => number): Promise<T> {
  for (let wait = 200; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await work();
    } catch (err) {
      if (!connectionLost(err) || Date.now() + wait > until()) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
