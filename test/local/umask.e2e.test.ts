/**
 * Modes that do not depend on the umask: `local` and `render` run under `umask 000`, with a state folder that exists
 * already (the folders inside it do not). Every folder the start creates is the owner's only (0700), every file that
 * holds a secret is 0600, and nothing is writable by others.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BIN, PROJECT_ROOT } from "../support/cli";
import { runProcess, type ProcessResult } from "../support/processes";
import { fixtureStackFile } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-umask-"));
// Enterable by others, like a checkout in an ordinary folder (the server may run as the postgres user).
fs.chmodSync(dir, 0o711);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `hub-export <args>` as `sh -c 'umask 000; exec node …'` runs it. */
function underUmask000(args: string[]): Promise<ProcessResult> {
  return runProcess("sh", ["-c", 'umask 000; exec "$0" "$@"', process.execPath, BIN, ...args], { cwd: PROJECT_ROOT });
}

/** Every folder and file under `root`, with its mode; the PostgreSQL data folder is the server's own (it sets 0700). */
function walk(root: string): { file: string; mode: number; folder: boolean }[] {
  const out: { file: string; mode: number; folder: boolean }[] = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    const file = path.join(root, entry.name);
    const st = fs.lstatSync(file);
    out.push({ file: path.relative(dir, file), mode: st.mode & 0o777, folder: st.isDirectory() });
    if (st.isDirectory() && entry.name !== "postgres") out.push(...walk(file));
  }
  return out;
}

describe("modes under umask 000", () => {
  it("local: an existing state folder gets private folders and secret files whatever the umask", async () => {
    const state = path.join(dir, "state");
    fs.mkdirSync(state, { mode: 0o700 });
    const r = await underUmask000(["local", "--file", fixtureStackFile("qa"), "--dir", state, "--employees", "20"]);
    expect(r.code, r.stderr).toBe(0);
    const entries = walk(state);
    const rel = (p: string) => path.join("state", p);
    // The folders the procedure names, and every other one: the owner's only.
    for (const folder of [
      "bucket",
      "bucket/Tools",
      "bucket/Tools/hub_python_scripts",
      "bucket/pipelines",
      "bucket/templates/hub_hrsys_export",
      "connections",
      "logs",
    ]) {
      expect(
        entries.find((e) => e.file === rel(folder)),
        folder,
      ).toMatchObject({ folder: true, mode: 0o700 });
    }
    expect(entries.filter((e) => e.folder && e.mode !== 0o700)).toEqual([]);
    // Files with secrets: the owner's only.
    const secrets = [
      "secrets.json",
      "bucket/Tools/hub_python_scripts/tenant_credentials.txt",
      "bucket/Tools/hub_python_scripts/credentials.ini",
    ].map(rel);
    secrets.push(
      ...entries
        .filter((e) => e.file.startsWith(rel("connections/")) || e.file.startsWith(rel("logs/")))
        .map((e) => e.file),
    );
    expect(secrets.length).toBeGreaterThan(5);
    for (const file of secrets)
      expect(
        entries.find((e) => e.file === file),
        file,
      ).toMatchObject({ folder: false, mode: 0o600 });
    // Nothing is writable by others.
    expect(entries.filter((e) => e.mode & 0o022)).toEqual([]);
  });

  it("render --out writes a file others cannot write", async () => {
    const out = path.join(dir, "definition.json");
    const r = await underUmask000(["render", "--file", fixtureStackFile("qa"), "--out", out]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.statSync(out).mode & 0o777).toBe(0o644);
  });
});
