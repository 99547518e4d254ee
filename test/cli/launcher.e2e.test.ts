/**
 * The command runs from a bundle of its sources built inside the project (scripts/build-cli.js): nothing lands in the
 * system temporary folder, an edited source is picked up on the next call, concurrent first calls agree, and an
 * install whose cache cannot be written still runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { runCli } from "../support/cli";
import { copyProject } from "../support/projectCopy";
import { runProcess } from "../support/processes";
import { fixtureStackFile } from "../fixtures/stacks";
import type { Options } from "../../cli/command";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bundle-"));
const cacheDirs: string[] = [];
afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
  for (const dir of cacheDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface BuildCli {
  cacheDir: () => string;
  inMemoryCli: () => Promise<{ main(argv: string[], io: unknown): Promise<number> }>;
}

/** A copy of the project at `root`, node_modules linked; its CLI bundle's cache folder is removed afterwards. */
function checkout(root: string): string {
  copyProject(root);
  cacheDirs.push((require(path.join(root, "scripts", "build-cli.js")) as BuildCli).cacheDir());
  return root;
}

const runIn = (root: string, args: string[]) => runCli(args, { root });

const summaryLine = (help: string, command: string) =>
  help
    .split("\n")
    .find((l) => l.trimStart().startsWith(`${command} `))
    ?.trim();

describe("the hub-export bundle", () => {
  it("plans without loading TypeScript or npm's arborist, which only the SDK's function serializer uses", async () => {
    const probe = path.join(work, "loaded-modules.cjs");
    const report = path.join(work, "loaded-modules.json");
    fs.writeFileSync(
      probe,
      `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(report)}, JSON.stringify(Object.keys(require.cache))));`,
    );
    const plan = await runCli(["plan", "--file", fixtureStackFile("qa")], {
      env: { NODE_OPTIONS: `--require ${probe}` },
    });
    expect(plan.code, plan.stderr).toBe(0);
    const loaded = JSON.parse(fs.readFileSync(report, "utf8")) as string[];
    expect(loaded.some((f) => f.includes(`${path.sep}@pulumi${path.sep}pulumi${path.sep}`))).toBe(true);
    expect(loaded.filter((f) => /[\\/]node_modules[\\/](typescript|@npmcli[\\/]arborist)[\\/]/.test(f))).toEqual([]);
  });

  it("writes nothing to the system temporary folder: --help, validate, and a local run with its child processes", async () => {
    const tmp = fs.mkdtempSync(path.join(work, "tmp-"));
    const env = { TMPDIR: tmp, TMP: tmp, TEMP: tmp };
    const help = await runCli(["--help"], { env });
    expect(help.code).toBe(0);
    const validate = await runCli(["validate", "--file", fixtureStackFile("qa")], { env });
    expect(validate.code, validate.stderr).toBe(0);
    // Embedded PostgreSQL (initdb, postgres), the emulator and the export task in its own node process.
    const local = await runCli(
      ["local", "--file", fixtureStackFile("qa"), "--dir", path.join(work, "state"), "--employees", "20"],
      { env },
    );
    expect(local.code, local.stdout + local.stderr).toBe(0);
    expect(fs.readdirSync(tmp)).toEqual([]);
  }, 180_000);

  it("bench --help and bench <name> --help list the benchmarks' own options, which the launcher loads by name", async () => {
    const all = await runCli(["bench", "--help"]);
    expect(all.code).toBe(0);
    const flat = (text: string) => text.replace(/\s+/g, " ");
    const optionsOf = async (name: string) =>
      Object.entries(((await import(`../../bench/${name}.ts`)) as { options: Options }).options);
    for (const name of ["export", "emulator", "plan", "outage"]) {
      for (const [option, o] of await optionsOf(name)) {
        expect(flat(all.stdout)).toContain(`--${option}`);
        expect(flat(all.stdout)).toContain(o.description);
      }
    }
    const one = await runCli(["bench", "emulator", "--help"]);
    expect(one.code).toBe(0);
    for (const [option] of await optionsOf("emulator")) expect(one.stdout).toContain(`--${option}`);
    expect(one.stdout).not.toContain("--employees");
  });

  it("before `npm ci` says to run it, in one line, exit 1: not an internal error with a stack trace", async () => {
    // A fresh clone: the sources, no node_modules.
    const root = copyProject(path.join(work, "not-installed"), { nodeModules: "none" });
    const line = `hub-export: the project's dependencies are not installed (no esbuild in node_modules): run npm ci first, in ${root}\n`;
    for (const args of [["--help"], ["validate", "--stack", "qa"]]) {
      const r = await runIn(root, args);
      expect(r.stderr).toBe(line);
      expect(r.code).toBe(1);
    }
    // As the README has it: npx finds the project's own bin (offline: npm asks no registry).
    const npx = await runProcess("npx", ["--offline", "hub-export", "validate", "--stack", "qa"], { cwd: root });
    expect(npx.stderr).toContain(line);
    expect(npx.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(npx.code).toBe(1);
  }, 120_000);

  describe("in a checkout of its own", () => {
    const root = path.join(work, "checkout");
    const commandFile = path.join(root, "cli", "commands", "discard.ts");
    beforeAll(() => void checkout(root));

    it("concurrent first calls all succeed and agree; an unchanged source is not rebuilt", async () => {
      const results = await Promise.all([1, 2, 3, 4].map(() => runIn(root, ["--help"])));
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      expect(new Set(results.map((r) => r.stdout)).size).toBe(1);
      const manifest = path.join(cacheDirs[0], "manifest.json");
      const built = fs.statSync(manifest).mtimeMs;
      expect((await runIn(root, ["--help"])).code).toBe(0);
      expect(fs.statSync(manifest).mtimeMs).toBe(built);
    });

    it("runs an edited source on the next call", async () => {
      const before = summaryLine((await runIn(root, ["--help"])).stdout, "discard");
      expect(before).toMatch(/^discard\s+\S/);
      const text = fs.readFileSync(commandFile, "utf8");
      const summary = /summary: "([^"]+)"/.exec(text)![1];
      fs.writeFileSync(commandFile, text.replace(summary, "Edited summary"));
      expect(summaryLine((await runIn(root, ["--help"])).stdout, "discard")).toMatch(
        /^discard \[options\]\s+Edited summary$/,
      );
      // A source error is reported as such, with the file, and no bundle is run.
      fs.writeFileSync(commandFile, text.replace(`"${summary}"`, '"unterminated'));
      const broken = await runIn(root, ["--help"]);
      expect(broken.code).toBe(70);
      expect(broken.stderr).toMatch(/^hub-export: building the command from its sources failed:/);
      expect(broken.stderr).toContain("cli/commands/discard.ts");
      fs.writeFileSync(commandFile, text);
      expect(summaryLine((await runIn(root, ["--help"])).stdout, "discard")).toBe(before);
    });

    it("builds in memory, writing nothing, where the cache cannot be written", async () => {
      const { inMemoryCli } = require(path.join(root, "scripts", "build-cli.js")) as BuildCli;
      fs.rmSync(cacheDirs[0], { recursive: true, force: true });
      const cli = await inMemoryCli();
      const stdout = new PassThrough();
      let out = "";
      stdout.on("data", (d) => (out += d));
      expect(await cli.main(["--help"], { stdout, stderr: new PassThrough(), stdin: new PassThrough() })).toBe(0);
      expect(out).toContain("Usage: hub-export [options] [command]");
      expect(fs.existsSync(cacheDirs[0])).toBe(false);
    });
  });
});
