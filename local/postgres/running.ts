/**
 * A server already running on a data folder: PostgreSQL's own `postmaster.pid` (pid, port, status) plus the
 * `hub-export.owner` file naming the process that started it (for the "how to stop it" hint).
 */
import fs from "node:fs";
import path from "node:path";

export interface RunningServer {
  /** The postmaster's pid. */
  pid: number;
  port: number;
  ready: boolean;
  /** The hub-export process that started it, when it is still alive. */
  owner?: { pid: number; command: string };
}

export const OWNER_FILE = "hub-export.owner";

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function runningServer(dataDir: string): RunningServer | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  const server: RunningServer = { pid, port: Number(lines[3]), ready: (lines[7] ?? "").trim() === "ready" };
  try {
    const owner = JSON.parse(fs.readFileSync(path.join(dataDir, OWNER_FILE), "utf8")) as {
      pid: number;
      command: string;
    };
    if (owner.pid !== process.pid && isAlive(owner.pid)) server.owner = owner;
  } catch {
    // started by something else, or the owner is gone
  }
  return server;
}

export function writeOwner(dataDir: string, command: string): void {
  fs.writeFileSync(path.join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, command }) + "\n", {
    mode: 0o600,
  });
}

/** "in use by 'hub-export local --keep' (process 1234): stop it with Ctrl-C in its terminal, or kill 1234" */
export function inUseHint(server: RunningServer): string {
  if (server.owner)
    return `in use by '${server.owner.command}' (process ${server.owner.pid}): stop it with Ctrl-C in its terminal, or 'kill ${server.owner.pid}'`;
  return `in use by a PostgreSQL server (process ${server.pid}) that no hub-export process owns any more: stop it with 'kill -INT ${server.pid}'`;
}
