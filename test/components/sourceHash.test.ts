/** The image trigger: a content hash of what the task image is built from, stable and sensitive to every file. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listSourceFiles, taskSourceHash } from "../../components/task/sourceHash";
import { imageTag } from "../../components/task/taskImage";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-hash-"));
const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
};
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe("task source hash", () => {
  const sources = ["task", "core", "scripts/build-task.js"];
  write("task/Dockerfile", "FROM node:20-slim\n");
  write("task/run.ts", "export {};\n");
  write("task/run.test.ts", "test\n");
  write("task/node_modules/x/index.js", "x\n");
  write("core/a.ts", "export const a = 1;\n");
  write("scripts/build-task.js", "// bundle\n");
  write("other/b.ts", "ignored\n");

  it("covers the sources, without tests, dependencies or other folders", () => {
    expect(listSourceFiles(root, sources)).toEqual(["core/a.ts", "scripts/build-task.js", "task/Dockerfile", "task/run.ts"]);
  });

  it("is stable, and changes with any file's content or name", () => {
    const first = taskSourceHash(root, sources);
    expect(taskSourceHash(root, sources)).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    write("other/b.ts", "still ignored\n");
    expect(taskSourceHash(root, sources)).toBe(first);
    write("core/a.ts", "export const a = 2;\n");
    const second = taskSourceHash(root, sources);
    expect(second).not.toBe(first);
    fs.renameSync(path.join(root, "task/run.ts"), path.join(root, "task/main.ts"));
    expect(taskSourceHash(root, sources)).not.toBe(second);
    expect(imageTag(first)).toBe(`src-${first.slice(0, 24)}`);
  });
});
