import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runTask, taskBundle, TASK_NODE } from "../support/taskProcess";
import { writeImageContext } from "../../components/task/taskImage";

const ROOT = path.join(__dirname, "..", "..");

const { imageNode, binaryPackage, unlinkBin } = require("../../scripts/image-node.js") as {
  imageNode: () => { version: string; major: number; from: string };
  binaryPackage: (platform?: string, arch?: string) => string;
  unlinkBin: (root: string) => void;
};

const { bundleOptions } = require("../../scripts/build-task.js") as {
  bundleOptions: (outdir: string) => { target: string };
};

describe("the task bundle", () => {
  it("is one CommonJS file that runs with node alone, as the image runs it", async () => {
    const file = await taskBundle();
    expect(fs.existsSync(file)).toBe(true);
    // No node_modules next to it: everything it needs is inside.
    expect(fs.existsSync(path.join(path.dirname(file), "node_modules"))).toBe(false);
    const help = await runTask(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: hub-export run [options]");
    expect(help.stdout).toMatch(/^ {2}--definition <PATH\|s3:\/\/BUCKET\/KEY> /m);
    expect(help.stdout).toMatch(/^ {2}70 {2}internal error/m);
    const usage = await runTask(["run"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--definition is required/);
  });

  it("the Dockerfile runs the bundle as the user node, on a base pinned by digest with its tag in a comment", () => {
    const text = fs.readFileSync(path.join(ROOT, "task", "Dockerfile"), "utf8");
    // A supported LTS (Node 20 reached its end of life in April 2026), one exact image: a digest, never a bare tag.
    expect(text).toMatch(/^FROM node:(22|24)\.\d+\.\d+-bookworm-slim@sha256:[0-9a-f]{64}$/m);
    expect(text.match(/^FROM /gm)).toHaveLength(1);
    const { version } = imageNode();
    expect(text).toContain(`\n# node:${version}-bookworm-slim\nFROM node:${version}-bookworm-slim@sha256:`);
    expect(text).toMatch(/^USER node$/m);
    expect(text).toMatch(/ENTRYPOINT \["node", .*"\/app\/index\.js", "run"\]/);
  });

  it("is built for the image's Node.js major, and its tests run it on the image's Node.js", () => {
    const { version, major } = imageNode();
    expect(bundleOptions("/unused").target).toBe(`node${major}`);
    // The exact version is pinned for the platforms npm has it for, and that is what the tests run here.
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
      optionalDependencies: Record<string, string>;
    };
    expect(pkg.optionalDependencies).toMatchObject({
      [binaryPackage("linux", "x64")]: version,
      [binaryPackage("darwin", "x64")]: version,
    });
    const running = execFileSync(TASK_NODE, ["--version"]).toString().trim();
    if (fs.existsSync(path.join(ROOT, "node_modules", binaryPackage()))) expect(running).toBe(`v${version}`);
    else expect(running.split(".")[0]).toBe(`v${major}`);
  });

  it("leaves npm scripts and npx on the machine's Node.js: the postinstall removes the .bin/node link of the binary packages", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.postinstall).toBe("node scripts/image-node.js unlink-bin");
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bin-"));
    try {
      const bin = path.join(root, "node_modules", ".bin");
      fs.mkdirSync(bin, { recursive: true });
      fs.symlinkSync(`../${binaryPackage()}/bin/node`, path.join(bin, "node"));
      fs.symlinkSync("../vitest/vitest.mjs", path.join(bin, "vitest"));
      unlinkBin(root);
      expect(fs.readdirSync(bin)).toEqual(["vitest"]);
      // Not npm's link into a binary package (a node the user put there): left alone.
      fs.symlinkSync("/usr/local/bin/node", path.join(bin, "node"));
      unlinkBin(root);
      expect(fs.readdirSync(bin).sort()).toEqual(["node", "vitest"]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the image build context", () => {
  it(".dockerignore sends only the bundle to the builder: the files the Dockerfile copies", () => {
    const root = path.join(__dirname, "..", "..");
    const ignore = fs
      .readFileSync(path.join(root, ".dockerignore"), "utf8")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"));
    expect(ignore).toEqual(["*", "!dist/task/index.js", "!dist/task/index.js.LEGAL.txt"]);
    const copied = /^COPY .* (\S+) (\S+) \/app\/$/m.exec(
      fs.readFileSync(path.join(root, "task", "Dockerfile"), "utf8"),
    )!;
    expect(ignore.filter((l) => l.startsWith("!")).map((l) => l.slice(1))).toEqual([copied[1], copied[2]]);
  });
});

describe("the image's build context (components/task/taskImage.ts)", () => {
  it("holds the two files the Dockerfile copies, the same bytes and modes whichever folder it is written to", async () => {
    const base = path.join(".tmp", `image-context-${process.pid}`);
    try {
      const folders = [path.join(base, "a"), path.join(base, "b", "c")];
      for (const folder of folders) await writeImageContext(folder, ROOT);
      const listing = (folder: string) =>
        fs
          .readdirSync(path.join(ROOT, folder), { recursive: true, encoding: "utf8" })
          .filter((f) => fs.statSync(path.join(ROOT, folder, f)).isFile())
          .map((f) => `${f} ${(fs.statSync(path.join(ROOT, folder, f)).mode & 0o777).toString(8)}`)
          .sort();
      expect(listing(folders[0])).toEqual(["dist/task/index.js 644", "dist/task/index.js.LEGAL.txt 644"]);
      for (const file of ["dist/task/index.js", "dist/task/index.js.LEGAL.txt"])
        expect(fs.readFileSync(path.join(ROOT, folders[1], file))).toEqual(
          fs.readFileSync(path.join(ROOT, folders[0], file)),
        );
      // Written once per content hash: a second call leaves it as it is.
      const written = fs.statSync(path.join(ROOT, folders[0], "dist/task/index.js")).mtimeMs;
      await writeImageContext(folders[0], ROOT);
      expect(fs.statSync(path.join(ROOT, folders[0], "dist/task/index.js")).mtimeMs).toBe(written);
    } finally {
      fs.rmSync(path.join(ROOT, base), { recursive: true, force: true });
    }
  });
});
