/**
 * Who the embedded server runs as. PostgreSQL refuses to run as root, so as root it runs
 *  1. as the `postgres` user, when that user can reach the binaries and the data folder (created if missing), or
 *  2. in a user namespace where root appears as an unprivileged user (`unshare --map-user`): the files are still
 *     root's, so a checkout under a folder only root can enter works without opening it up, or
 *  3. not at all: one line saying what to do, before anything is spawned.
 * A data folder keeps the way it was created (its owner says which).
 */
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { UserError } from "../../core/errors";

export interface ServerUser {
  mode: "self" | "postgres-user" | "user-namespace";
  /** For spawn: drop to this uid/gid (postgres-user). */
  uid?: number;
  gid?: number;
  /** The command line that runs `binary args…` as this user. */
  command(binary: string, args: string[]): [string, string[]];
}

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

export function passwdEntry(name: string, passwd = "/etc/passwd"): PasswdEntry | undefined {
  if (!fs.existsSync(passwd)) return undefined;
  for (const line of fs.readFileSync(passwd, "utf8").split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name && uid !== undefined && gid !== undefined) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

/**
 * The first folder from `within` (default `/`) down to `dir` that `uid`/`gid` cannot enter, by its mode bits (root's
 * own access check would always pass), or undefined.
 */
export function canEnter(
  dir: string,
  uid: number,
  gid: number,
  within = path.parse(path.resolve(dir)).root,
): string | undefined {
  let current = path.resolve(dir);
  const top = path.resolve(within);
  const chain: string[] = [];
  while (true) {
    chain.unshift(current);
    const parent = path.dirname(current);
    if (current === top || parent === current) break;
    current = parent;
  }
  for (const folder of chain) {
    let st: fs.Stats;
    try {
      st = fs.statSync(folder);
    } catch {
      return undefined; // not created yet: we create it with permissions that fit
    }
    const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return folder;
  }
  return undefined;
}

let namespaceWorks: boolean | undefined;
/** Whether `unshare --user --map-user` works here (it needs util-linux and a kernel/container allowing it). */
function userNamespaceAvailable(uid: number, gid: number): boolean {
  if (namespaceWorks === undefined) {
    const probe = spawnSync("unshare", ["--user", `--map-user=${uid}`, `--map-group=${gid}`, "true"], {
      stdio: "ignore",
      timeout: 10_000,
    });
    namespaceWorks = probe.status === 0;
  }
  return namespaceWorks;
}

export function serverUser(binDir: string, dataDir: string): ServerUser {
  const direct: ServerUser = { mode: "self", command: (binary, args) => [binary, args] };
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return direct;

  // Who shows in a namespace must exist in /etc/passwd (initdb looks its name up).
  const pgUser = passwdEntry("postgres");
  const nsUser = pgUser ?? passwdEntry("nobody");
  const namespace = (): ServerUser => ({
    mode: "user-namespace",
    command: (binary, args) => [
      "unshare",
      ["--user", `--map-user=${nsUser!.uid}`, `--map-group=${nsUser!.gid}`, "--", binary, ...args],
    ],
  });
  const asPostgres = (u: PasswdEntry): ServerUser => ({
    mode: "postgres-user",
    uid: u.uid,
    gid: u.gid,
    command: (binary, args) => [binary, args],
  });
  const blocked = (u: PasswdEntry) => canEnter(binDir, u.uid, u.gid) ?? canEnter(path.dirname(dataDir), u.uid, u.gid);
  const cannot = (folder: string) =>
    new UserError(
      `embedded PostgreSQL cannot run as root and the 'postgres' user cannot enter ${folder}: run as a non-root user, or move the checkout under a folder others can enter (chmod o+x on ${folder} would also do)`,
    );

  const existing = fs.existsSync(path.join(dataDir, "PG_VERSION")) ? fs.statSync(dataDir).uid : undefined;
  if (existing === 0) {
    if (nsUser && userNamespaceAvailable(nsUser.uid, nsUser.gid)) return namespace();
    throw new UserError(
      `embedded PostgreSQL: ${dataDir} was created in a user namespace, which is not available now: remove it to start over`,
    );
  }
  if (existing !== undefined) {
    if (!pgUser || existing !== pgUser.uid)
      throw new UserError(
        `embedded PostgreSQL: ${dataDir} belongs to uid ${existing}, not to the 'postgres' user: remove it to start over`,
      );
    const folder = blocked(pgUser);
    if (folder) throw cannot(folder);
    return asPostgres(pgUser);
  }
  // A new data folder: the postgres user when it can reach everything, else a user namespace.
  if (pgUser && !blocked(pgUser)) return asPostgres(pgUser);
  if (nsUser && userNamespaceAvailable(nsUser.uid, nsUser.gid)) return namespace();
  if (!pgUser)
    throw new UserError(
      "embedded PostgreSQL cannot run as root, there is no 'postgres' user and user namespaces are not available: run as a non-root user, or create the user ('useradd --system postgres')",
    );
  throw cannot(blocked(pgUser)!);
}
