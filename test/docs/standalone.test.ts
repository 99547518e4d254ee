/** The repository stands alone: its docs and code point only inside it, and say what the project really needs. */
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { PROJECT_ROOT } from "../support/cli";

const tracked = execFileSync("git", ["ls-files"], { cwd: PROJECT_ROOT, encoding: "utf8" })
  .split("\n")
  .filter(
    (f) =>
      f && fs.existsSync(path.join(PROJECT_ROOT, f)) && !/\.(png|jpg|gz|zip)$/.test(f) && f !== "package-lock.json",
  );

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

  it("every link to a section (#anchor) names a heading of its page, as GitHub makes its anchors", () => {
    const broken: string[] = [];
    for (const file of tracked.filter((f) => f.endsWith(".md"))) {
      const text = fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8");
      for (const [, target, anchor] of text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const page = target ? path.resolve(PROJECT_ROOT, path.dirname(file), target) : path.join(PROJECT_ROOT, file);
        if (!fs.existsSync(page)) continue;
        if (!anchors(fs.readFileSync(page, "utf8")).includes(anchor)) broken.push(`${file}: ${target}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the page the hub contract sends the reader to for the hub team's steps has them", () => {
    const contract = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "hub-contract.md"), "utf8");
    const start = contract.indexOf("## What has no API");
    const section = contract.slice(start, contract.indexOf("\n## ", start + 3));
    const [, target, anchor] = /\]\(([^)#\s]+)#([^)\s]+)\)/.exec(section) ?? [];
    expect(target, "the section links to the page with the steps").toBeDefined();
    const page = fs.readFileSync(path.resolve(PROJECT_ROOT, "docs", target), "utf8");
    const steps = sectionOf(page, anchor);
    expect(steps).toContain("hub checklist");
    expect(steps).toContain("EMPL data domain");
  });

  it("the README states the Node versions that package.json's engines accept", () => {
    const engines = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8")).engines.node;
    expect(engines).toBe(">=20.19 <21 || >=22");
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    expect(readme).toContain("Node.js 20 (20.19 or later) or 22 and later");
    expect(readme).not.toMatch(/Node 20\.19 or later/);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, each space a -; repeats get -1, -2. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The headings of a page (not a `#` line in a code block): line, level, anchor. */
function headings(markdown: string): { line: number; level: number; anchor: string }[] {
  const seen = new Map<string, number>();
  const out: { line: number; level: number; anchor: string }[] = [];
  let fenced = false;
  markdown.split("\n").forEach((text, line) => {
    if (/^\s*```/.test(text)) fenced = !fenced;
    const heading = !fenced && /^(#{1,6})\s+(.*)$/.exec(text);
    if (!heading) return;
    const base = slug(heading[2]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.push({ line, level: heading[1].length, anchor: n ? `${base}-${n}` : base });
  });
  return out;
}

function anchors(markdown: string): string[] {
  return headings(markdown).map((h) => h.anchor);
}

/** The text of the section whose anchor is `anchor`, up to the next heading of its level or higher. */
function sectionOf(markdown: string, anchor: string): string {
  const all = headings(markdown);
  const start = all.find((h) => h.anchor === anchor);
  if (!start) return "";
  const end = all.find((h) => h.line > start.line && h.level <= start.level);
  return markdown.split("\n").slice(start.line, end?.line).join("\n");
}
