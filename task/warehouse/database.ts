/**
 * The warehouse connection: a small pool, opened from the PostgreSQL connection record. Every statement has a
 * deadline (a server that stops answering must not hold a run for a day): past it, the session is given up as a lost
 * one is (task/README.md, "A warehouse that stops answering").
 */
import { Pool, type ClientBase, type PoolClient, type QueryConfig } from "pg";
import { UserError } from "../../core/errors";
import type { DatabaseSettings } from "../connections/record";

export type { PoolClient };

/** A statement deadline and the setting it comes from (named in the stop's reason). */
export interface Deadline {
  seconds: number;
  setting: string;
}

/** The settings of the statement deadlines (task/context.ts reads them): every statement's, and the extraction's. */
export const DEADLINE_ENV = {
  statement: { name: "HUB_EXPORT_WAREHOUSE_DEADLINE_SECONDS", default: 60 },
  extract: { name: "HUB_EXPORT_EXTRACT_DEADLINE_SECONDS", default: 120 },
} as const;

/** TCP keepalive probes start after this long without traffic: a connection dropped on the way is noticed. */
const KEEPALIVE_DELAY_MS = 30_000;
/** How long closing pools waits for their sessions to close before dropping them (a stopped server never answers). */
const CLOSE_WAIT_MS = 2_000;
/** The error of a statement past its deadline: a lost connection (connectionLost), the reason its message. */
const DEADLINE_CODE = "HUB_EXPORT_WAREHOUSE_DEADLINE";

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
  /** Each statement's deadline (the extraction's statements have their own: `withDeadline`). */
  deadline?: Deadline;
}

/**
 * One synchronous commit that writes WAL (a transactional logical message: no table is touched): PostgreSQL flushes
 * its WAL in order, so every commit made before it is on disk once it returns.
 */
const FLUSH_BARRIER =
  "BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_logical_emit_message(true, 'hub-export', 'flush'); COMMIT";

/** Pools whose sessions commit asynchronously (a crash of the server loses their last commits): see `flush`. */
const asynchronous = new WeakSet<Pool>();

/** Whether the commits of `pool`'s sessions are on disk only after a `flush` (they commit asynchronously). */
export function commitsAsynchronously(pool: Pool): boolean {
  return asynchronous.has(pool);
}

/** Waits until every commit made before the call is on disk (its WAL flushed). */
export async function flush(pool: Pool): Promise<void> {
  await pool.query(FLUSH_BARRIER);
}

/** Whether `flush` works on this server (a privilege or a server without the function may refuse it). */
async function flushes(pool: Pool): Promise<boolean> {
  try {
    await flush(pool);
    return true;
  } catch (err) {
    if (connectionLost(err)) throw err;
    return false;
  }
}

/** Sessions lost so far (ended by the server or the network, not given up by us), in every pool of the process. */
let losses = 0;

/**
 * How many warehouse sessions the process has lost so far: when it grows, a commit not yet flushed may be gone (a
 * crash of the server ends every session and loses what it had not flushed).
 */
export function lostSessions(): number {
  return losses;
}

/** PostgreSQL 14+: a backend notices within a second that a killed task is gone, and stops its query. */
const CHECK_CLIENT = "-c client_connection_check_interval=1000";

export async function openDatabase(
  connection: string,
  settings: DatabaseSettings,
  open: OpenOptions = {},
): Promise<Pool> {
  const max = open.max ?? POOL_SIZE;
  const deadline = open.deadline ?? { seconds: DEADLINE_ENV.statement.default, setting: DEADLINE_ENV.statement.name };
  const warehouse = `the warehouse (connection ${connection}, ${settings.host}:${settings.port}/${settings.database})`;
  const attempt = (check: boolean, asynchronous: boolean) =>
    tryOpen(
      settings,
      max,
      [check ? CHECK_CLIENT : "", asynchronous ? ASYNCHRONOUS_COMMIT : ""].filter(Boolean).join(" ") || undefined,
      deadline,
      warehouse,
    );
  try {
    let check = true;
    let pool: Pool;
    try {
      pool = await attempt(check, open.asynchronousCommit === true);
    } catch (err) {
      // An older server does not know the setting (42704): go without it.
      if ((err as { code?: string }).code !== "42704") throw err;
      check = false;
      pool = await attempt(check, open.asynchronousCommit === true);
    }
    if (!open.asynchronousCommit) return pool;
    // Asynchronous commits only where a flush barrier works (StatusWriter.settle); else every commit waits for it.
    if (await flushes(pool)) {
      asynchronous.add(pool);
      return pool;
    }
    await closePools(pool);
    return await attempt(check, false);
  } catch (failure) {
    const e = failure as NodeJS.ErrnoException & { code?: string };
    throw new UserError(
      `cannot connect to the database of connection ${connection} (${settings.host}:${settings.port}/${settings.database}): ${e.code ? `${e.code}: ` : ""}${e.message}`,
    );
  }
}

async function tryOpen(
  settings: DatabaseSettings,
  max: number,
  options: string | undefined,
  deadline: Deadline,
  warehouse: string,
): Promise<Pool> {
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
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
  // A dropped idle connection must not crash the process; the query that needs it reports the error.
  pool.on("error", () => {});
  pool.on("connect", (client) => withDeadlines(pool, client, deadline, warehouse));
  pool.on("acquire", (client) => checkedOut.add(client));
  pool.on("release", (_err, client) => checkedOut.delete(client));
  try {
    const client = await pool.connect();
    client.release();
    return pool;
  } catch (err) {
    await closePools(pool);
    throw err;
  }
}

/** The open sessions of the process's pools, each with its pool. */
const sessions = new Map<PoolClient, Pool>();
/** Sessions checked out of their pool now. */
const checkedOut = new WeakSet<PoolClient>();
/** Sessions whose statements have another deadline than their pool's (`withDeadline`), while checked out. */
const sessionDeadlines = new WeakMap<PoolClient, Deadline>();
/** Why a session was given up (closed by us): for the run's stop reason (watchSessions); not counted as lost. */
const givenUp = new WeakMap<PoolClient, string>();

/**
 * Gives every statement of `client` a deadline: the one its config carries (`withDeadline`), the session's, or the
 * pool's. Past it the session is given up (its socket closed: a frozen server answers neither the statement nor a
 * cancel request) and the statement fails with the reason; the pool's idle sessions, on the same server, go too.
 */
function withDeadlines(pool: Pool, client: PoolClient, fallback: Deadline, warehouse: string): void {
  sessions.set(client, pool);
  client.once("end", () => sessions.delete(client));
  // Ended by the server or the network, not given up by us: a crash, whose unflushed commits are gone.
  client.on("error", () => {
    if (!givenUp.has(client)) losses++;
  });
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { deadline?: Deadline } | string;
    const deadline = (typeof config === "object" && config.deadline) || sessionDeadlines.get(client) || fallback;
    let expired: Error | undefined;
    const timer = setTimeout(() => {
      expired = Object.assign(
        new Error(
          `${warehouse} did not answer within ${deadline.seconds} s (${deadline.setting}): its session was given up`,
        ),
        { code: DEADLINE_CODE },
      );
      giveUp(client, expired.message);
    }, deadline.seconds * 1000);
    const callback = typeof args.at(-1) === "function" ? (args.pop() as (err: unknown, res: unknown) => void) : null;
    if (callback)
      return query(...args, (err: unknown, res: unknown) => {
        clearTimeout(timer);
        callback(expired ?? err, res);
      });
    return (query(...args) as Promise<unknown>).then(
      (res) => (clearTimeout(timer), res),
      (err: unknown) => {
        clearTimeout(timer);
        throw expired ?? err;
      },
    );
  };
}

/** Closes `client`'s connection with `reason`, and the idle sessions of every pool (they reach the same server). */
function giveUp(client: PoolClient, reason: string): void {
  for (const session of [client, ...[...sessions.keys()].filter((s) => !checkedOut.has(s))]) {
    givenUp.set(session, reason);
    session.connection.stream.destroy();
  }
}

/**
 * The statements run through `work`'s pool have `deadline` instead of the pool's: the extraction's, which may read
 * whole tables. A view of `pool`: its `query` and the sessions `connect` checks out (until released).
 */
export function withDeadline(pool: Pool, deadline: Deadline): Pool {
  return Object.create(pool, {
    query: {
      value: (text: string | QueryConfig, ...rest: unknown[]) =>
        (pool.query as (...args: unknown[]) => unknown)(
          { ...(typeof text === "string" ? { text, values: rest.shift() } : text), deadline },
          ...rest,
        ),
    },
    connect: {
      value: async () => {
        const client = await pool.connect();
        sessionDeadlines.set(client, deadline);
        const release = client.release.bind(client);
        client.release = (err?: Error | boolean) => {
          sessionDeadlines.delete(client);
          release(err);
        };
        return client;
      },
    },
  }) as Pool;
}

/**
 * Ends the pools; a session still open after a short wait (its server stopped answering, and never closes it) is
 * dropped, so that nothing holds the process.
 */
export async function closePools(...pools: Pool[]): Promise<void> {
  await Promise.allSettled(pools.map((p) => p.end()));
  const open = [...sessions].filter(([, pool]) => pools.includes(pool)).map(([client]) => client);
  if (open.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(open.map((c) => new Promise((resolve) => c.once("end", resolve)))),
    new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS))),
  ]);
  clearTimeout(timer);
  for (const client of open)
    if (sessions.has(client)) {
      givenUp.set(client, "closed with its pool");
      client.connection.stream.destroy();
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
  if (code === DEADLINE_CODE) return message;
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
        onLost(
          givenUp.get(client) ??
            fatal ??
            connectionLost(err) ??
            `warehouse connection lost: ${err.message.split("\n")[0]}`,
        );
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
