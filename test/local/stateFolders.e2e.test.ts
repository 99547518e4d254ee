/**
 * The folders `local` keeps secrets in are ours alone: an existing state folder, connections/ and logs/ that others
 * can write are tightened to 0700 with one line each saying so, and the start goes on; a state folder of another
 * user is refused (exit 1) with the command that makes it ours, before anything is started or written.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runCli } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-folders-"));
// Enterable by others, like a checkout in an ordinary folder (the server may run as the postgres user).
fs.chmodSync(dir, 0o711);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const local = (root: string) =>
  runCli(["local", "--file", fixtureStackFile("qa"), "--dir", root, "--employees", "20"], { cwd: dir });

describe("the state folder and its secret folders", () => {
  it("writable by others: tightened to 0700, one line each, and the start completes", async () => {
    const root = path.join(dir, "open");
    for (const folder of [root, path.join(root, "connections"), path.join(root, "logs")]) {
      fs.mkdirSync(folder);
      fs.chmodSync(folder, 0o777);
    }
    const r = await local(root);
    expect(r.code, r.stderr).toBe(0);
    for (const name of ["open", "open/connections", "open/logs"]) {
      expect(r.stderr).toContain(
        `» ${name} could be written by other users and holds secrets: it is yours alone now (mode 0700)\n`,
      );
      expect(fs.statSync(path.join(dir, name)).mode & 0o777, name).toBe(0o700);
    }
    // Once: the next start finds them private.
    const again = await local(root);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("could be written by other users");
  });

  it.skipIf(process.geteuid?.() !== 0)(
    "another user's: refused with the command that makes it ours, nothing started or written",
    async () => {
      const root = path.join(dir, "theirs");
      fs.mkdirSync(root, { mode: 0o700 });
      fs.chownSync(root, 65534, 65534);
      const r = await local(root);
      expect(r.code).toBe(1);
      expect(r.stderr.split("\n").filter((l) => !l.startsWith("»") && l)).toEqual([
        `theirs belongs to another user (uid 65534) and holds secrets: make it yours (sudo chown -R 0 '${root}') or give another --dir`,
      ]);
      expect(fs.readdirSync(root)).toEqual([]);
    },
  );
});
