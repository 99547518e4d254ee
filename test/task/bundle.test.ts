import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runTask, taskBundle } from "../support/taskProcess";

describe("the task bundle", () => {
  it("is one CommonJS file that runs with node alone, as the image runs it", async () => {
    const file = await taskBundle();
    expect(fs.existsSync(file)).toBe(true);
    // No node_modules next to it: everything it needs is inside.
    expect(fs.existsSync(path.join(path.dirname(file), "node_modules"))).toBe(false);
    const help = await runTask(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: hub-export run --definition PATH|s3://BUCKET/KEY");
    expect(help.stdout).toMatch(/^ {2}70 {2}internal error/m);
    const usage = await runTask(["run"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--definition is required/);
  });

  it("the Dockerfile runs the bundle as the user node", () => {
    const text = fs.readFileSync(path.join(__dirname, "..", "..", "task", "Dockerfile"), "utf8");
    // A supported LTS (Node 20 reached its end of life in April 2026).
    expect(text).toMatch(/^FROM node:(22|24)[.\d]*-bookworm-slim(@sha256:[0-9a-f]{64})?$/m);
    expect(text).toMatch(/^USER node$/m);
    expect(text).toMatch(/ENTRYPOINT \["node", .*"\/app\/index\.js", "run"\]/);
  });
});

describe("the image build context", () => {
  it(".dockerignore sends only the bundle to the builder: the files the Dockerfile copies", () => {
    const root = path.join(__dirname, "..", "..");
    const ignore = fs.readFileSync(path.join(root, ".dockerignore"), "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
    expect(ignore).toEqual(["*", "!dist/task/index.js", "!dist/task/index.js.LEGAL.txt"]);
    const copied = /^COPY .* (\S+) (\S+) \/app\/$/m.exec(fs.readFileSync(path.join(root, "task", "Dockerfile"), "utf8"))!;
    expect(ignore.filter((l) => l.startsWith("!")).map((l) => l.slice(1))).toEqual([copied[1], copied[2]]);
  });
});
