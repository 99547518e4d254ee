/**
 * The image trigger: a content hash of what the image is made of. The bundle's part is esbuild's own list of inputs,
 * so every module cli/container.ts reaches counts (cli/ included), and nothing else does.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { contentHash, IMAGE_BUILD_FILES, imageSourceFiles, taskSourceHash } from "../../components/task/sourceHash";
import { imageTag } from "../../components/task/taskImage";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-hash-"));
const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
};
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe("image source files", () => {
  const files = imageSourceFiles();

  it("are the bundler's inputs: the task, the cli modules it runs, core, cls and the bundled dependencies", () => {
    expect(files).toEqual(
      expect.arrayContaining([
        "cli/container.ts",
        "task/run.ts",
        "cli/command.ts",
        "cli/commands/run.ts",
        "core/parameters.ts",
        "core/hubContract.ts",
      ]),
    );
    expect(files.some((f) => f.startsWith("node_modules/pg/"))).toBe(true);
    expect(files.some((f) => f.startsWith("node_modules/@aws-sdk/client-s3/"))).toBe(true);
    // And the files that shape the image.
    expect(files).toEqual(expect.arrayContaining([...IMAGE_BUILD_FILES]));
    for (const file of files) expect(fs.existsSync(path.join(__dirname, "..", "..", file)), file).toBe(true);
  });

  it("leave out what the bundle does not reach: the Pulumi program, the stack config, benchmarks, tests, local mode, the emulator", () => {
    for (const prefix of [
      "components/",
      "config/",
      "bench/",
      "test/",
      "local/",
      "emulator/",
      "providers/",
      "node_modules/@pulumi/",
    ])
      expect(
        files.filter((f) => f.startsWith(prefix)),
        prefix,
      ).toEqual([]);
  });
});

describe("the content hash", () => {
  write("task/Dockerfile", "FROM node:24-bookworm-slim\n");
  write("task/run.ts", "export {};\n");
  write("cli/run.ts", "export {};\n");
  write("other/b.ts", "ignored\n");
  const files = ["cli/run.ts", "task/Dockerfile", "task/run.ts"];

  it("is stable, changes with any listed file's content or name, and not with other files", () => {
    const first = contentHash(root, files);
    expect(contentHash(root, [...files].reverse())).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    write("other/b.ts", "still ignored\n");
    expect(contentHash(root, files)).toBe(first);
    write("cli/run.ts", "export const changed = 1;\n");
    const second = contentHash(root, files);
    expect(second).not.toBe(first);
    expect(contentHash(root, ["cli/run.ts", "task/Dockerfile", "task/main.ts"])).not.toBe(second);
    expect(imageTag(first)).toBe(`img-${first.slice(0, 24)}`);
  });
});

describe("the image's hash without a bundler at every plan", () => {
  /** A checkout whose bundler lists task/run.ts and counts its runs. */
  const project = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-list-"));
  afterAll(() => fs.rmSync(project, { recursive: true, force: true }));
  const put = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
    fs.writeFileSync(path.join(project, file), text);
  };
  const runs = path.join(project, "runs");
  put(
    "scripts/build-task.js",
    `const fs = require("node:fs");
     module.exports.bundleInputs = () => { fs.appendFileSync(${JSON.stringify(runs)}, "x"); return ["task/run.ts"]; };`,
  );
  put("task/run.ts", "export {};\n");
  put("components/program.ts", "export {};\n");
  const bundlerRuns = () => (fs.existsSync(runs) ? fs.readFileSync(runs, "utf8").length : 0);

  it("lists the inputs once; an edit of a listed file changes the hash (and lists again), an edit elsewhere does not", () => {
    const first = taskSourceHash(project);
    expect(bundlerRuns()).toBe(1);
    expect(taskSourceHash(project)).toBe(first);
    expect(bundlerRuns()).toBe(1);

    put("components/program.ts", "export const elsewhere = 1;\n");
    expect(taskSourceHash(project)).toBe(first);
    expect(bundlerRuns()).toBe(1);

    put("task/run.ts", "export const edited = 1;\n");
    const second = taskSourceHash(project);
    expect(second).not.toBe(first);
    expect(second).toBe(contentHash(project, imageSourceFiles(project)));
    expect(bundlerRuns()).toBe(3);
  });
});
