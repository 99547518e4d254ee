/**
 * The layers of docs/developing.md ("Layers"): `npm run lint` checks the tree against .dependency-cruiser.cjs; here,
 * the rules fail on a planted tree, and the bundles' own esbuild metafiles show what ships: the task's image and the
 * CLI carry no test or bench code, and the task's image no stack-config schema.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.join(__dirname, "..");
const CONFIG = path.join(ROOT, ".dependency-cruiser.cjs");
const DEPCRUISE = path.join(ROOT, "node_modules", "dependency-cruiser", "bin", "dependency-cruise.mjs");

/** depcruise's exit code (the number of violations) and its one line per violation. */
async function cruise(cwd: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [DEPCRUISE, "--config", CONFIG, "--output-type", "err", "."],
      { cwd, maxBuffer: 16 * 1024 * 1024 },
    );
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe("the layers", () => {
  const planted = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-layers-"));
  afterAll(() => fs.rmSync(planted, { recursive: true, force: true }));

  it("fail on a planted back-import and circle", async () => {
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(planted, file)), { recursive: true });
      fs.writeFileSync(path.join(planted, file), text);
    };
    fs.copyFileSync(path.join(ROOT, "tsconfig.json"), path.join(planted, "tsconfig.json"));
    write(
      "config/schema.ts",
      'import { a } from "../core/a";\nexport const schema = a;\nexport type Config = string;\n',
    );
    write("core/a.ts", 'import type { Config } from "../config/schema";\nexport const a: Config = "a";\n');
    write("core/b.ts", 'import { schema } from "../config/schema";\nexport const b = schema;\n');
    write("task/c.ts", 'import { run } from "../cli/run";\nexport const c = run;\n');
    write("cli/run.ts", 'import { c } from "../task/c";\nexport const run = () => c;\n');
    write("components/d.ts", 'import { fixture } from "../test/support/e";\nexport const d = fixture;\n');
    write("test/support/e.ts", "export const fixture = 1;\n");
    const { code, output } = await cruise(planted);
    expect(code).toBeGreaterThan(0);
    // An import of config/ from core/, a type-only one too; the task importing the CLI, and the circle.
    expect(output).toMatch(/core-imports-nothing-of-ours: core\/b\.ts → config\/schema\.ts/);
    expect(output).toMatch(/core-imports-nothing-of-ours: core\/a\.ts → config\/schema\.ts/);
    expect(output).toMatch(/task-imports-core-and-cls: task\/c\.ts → cli\/run\.ts/);
    expect(output).toMatch(/no-circular: (task\/c\.ts|cli\/run\.ts) →/);
    expect(output).toMatch(/shipped-not-to-bench-or-test: components\/d\.ts → test\/support\/e\.ts/);
  });

  it("hold the shipped code to @pulumi/pulumi's public entry points", async () => {
    const { output } = await cruise(ROOT);
    expect(output.split("\n").filter((l) => l.includes("pulumi-sdk-public-entry-points"))).toEqual([]);
    expect(output).toMatch(/\d+ modules, \d+ dependencies cruised/);
  });

  it("fail on a module of @pulumi/pulumi that is not a public entry point, imported or required", async () => {
    const sdk = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-sdk-"));
    try {
      fs.copyFileSync(path.join(ROOT, "tsconfig.json"), path.join(sdk, "tsconfig.json"));
      fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(sdk, "node_modules"), "dir");
      fs.mkdirSync(path.join(sdk, "components"));
      fs.writeFileSync(
        path.join(sdk, "components", "private.ts"),
        [
          'import type { Alias } from "@pulumi/pulumi/proto/alias_pb";',
          'const settings = require("@pulumi/pulumi/runtime/settings") as { getMonitor(): unknown };',
          "export const monitor = (alias?: Alias) => alias ?? settings.getMonitor();",
          "",
        ].join("\n"),
      );
      fs.writeFileSync(
        path.join(sdk, "components", "public.ts"),
        [
          'import * as pulumi from "@pulumi/pulumi";',
          'import type * as dynamic from "@pulumi/pulumi/dynamic";',
          'import * as runtime from "@pulumi/pulumi/runtime";',
          "export const mocks = (p?: dynamic.ResourceProvider) => p ?? [pulumi.runtime.setMocks, runtime];",
          "",
        ].join("\n"),
      );
      const { code, output } = await cruise(sdk);
      expect(code).toBe(2);
      expect(output).toMatch(
        /pulumi-sdk-public-entry-points: components\/private\.ts → \S*node_modules\/@pulumi\/pulumi\/proto\/alias_pb/,
      );
      expect(output).toMatch(
        /pulumi-sdk-public-entry-points: components\/private\.ts → \S*node_modules\/@pulumi\/pulumi\/runtime\/settings\.js/,
      );
      expect(output).not.toMatch(/components\/public\.ts/);
    } finally {
      fs.rmSync(sdk, { recursive: true, force: true });
    }
  });
});

interface Metafile {
  inputs: Record<string, { imports: { path: string; external?: boolean }[] }>;
}

/** The project's own source files in a bundle, relative to the root with /. */
const sources = (meta: Metafile) =>
  Object.keys(meta.inputs)
    .filter((f) => !f.includes("node_modules") && !/^[a-z-]*\(?[a-z]+\)?:/i.test(f))
    .map((f) => f.split(path.sep).join("/"));

describe("the bundles' metafiles", () => {
  it("the task's image: the task, core and cls; no stack config, no test or bench code", () => {
    const { bundleOptions } = require("../scripts/build-task.js") as {
      bundleOptions: (o: string, m: boolean) => object;
    };

    const esbuild = require("esbuild") as typeof import("esbuild");
    const { metafile } = esbuild.buildSync({ ...bundleOptions(path.join(os.tmpdir(), "unused"), false), write: false });
    const files = sources(metafile as Metafile);
    expect(files).toEqual(expect.arrayContaining(["cli/container.ts", "task/run.ts", "core/definition.ts"]));
    expect(files.filter((f) => /^(config|test|bench|components|providers|local|emulator|operate)\//.test(f))).toEqual(
      [],
    );
    // The zod schema of the stack config is config/schema.ts's; nothing that builds it is in the image.
    expect(files).not.toContain("config/schema.ts");
  });

  it("the CLI: nothing shipped reaches test/ or bench/, but for the bench command", async () => {
    const { bundleOptions } = require("../scripts/build-cli.js") as { bundleOptions: (outfile: string) => object };

    const esbuild = require("esbuild") as typeof import("esbuild");
    const { metafile } = await esbuild.build({
      ...bundleOptions(path.join(os.tmpdir(), "unused", "cli.js")),
      write: false,
    });
    const meta = metafile as Metafile;
    const files = sources(meta);
    expect(files).toContain("cli/main.ts");
    const below = (f: string) => /^(test|bench)\//.test(f);
    const reaching = Object.entries(meta.inputs)
      .filter(([from]) => !below(from) && from !== "cli/commands/bench.ts")
      .flatMap(([from, { imports }]) => imports.filter((i) => below(i.path)).map((i) => `${from} → ${i.path}`));
    expect(reaching).toEqual([]);
    // Left: the bench command bundles bench/*.ts, and bench/export.ts, outage.ts and plan.ts reach test/ (issue 35
    // deliverable 1 gives them the one applier of the plan). What test/ code is in the CLI, only bench/ brings.
    const tests = files.filter((f) => f.startsWith("test/"));
    for (const file of tests)
      expect(
        Object.entries(meta.inputs).some(
          ([from, { imports }]) => /^(bench|test)\//.test(from) && imports.some((i) => i.path === file),
        ),
        file,
      ).toBe(true);
  });
});
