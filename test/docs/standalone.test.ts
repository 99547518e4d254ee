/** The repository stands alone: its docs and code point only inside it, and say what the project really needs. */
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { PROJECT_ROOT } from "../support/cli";

const tracked = execFileSync("git", ["ls-files"], { cwd: PROJECT_ROOT, encoding: "utf8" })
  .split("\n")
  .filter((f) => f && fs.existsSync(path.join(PROJECT_ROOT, f)) && !/\.(png|jpg|gz|zip)$/.test(f) && f !== "package-lock.json");

describe("the repository stands alone", () => {
  it("no file refers to design notes or inputs outside the repository", () => {
    // Spelled in pieces so that this file does not match itself.
    const outside = new RegExp(["DESIGN", "\\.md|\\.\\./", "shared\\b"].join(""));
    const hits = tracked.filter((f) => outside.test(fs.readFileSync(path.join(PROJECT_ROOT, f), "utf8")));
    expect(hits).toEqual([]);
  });

  it("every relative link in the Markdown files points at a file of the repository", () => {
    const broken: string[] = [];
    for (const file of tracked.filter((f) => f.endsWith(".md"))) {
      const text = fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        if (!fs.existsSync(path.resolve(PROJECT_ROOT, path.dirname(file), target))) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the README states the Node versions that package.json's engines accept", () => {
    const engines = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8")).engines.node;
    expect(engines).toBe(">=20.19 <21 || >=22");
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    expect(readme).toContain("Node.js 20 (20.19 or later) or 22 and later");
    expect(readme).not.toMatch(/Node 20\.19 or later/);
  });
});
