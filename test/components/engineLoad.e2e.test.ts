/**
 * The program loads as the engine loads it. `pulumi up` does not run index.ts through tsx (as the CLI, local mode and
 * these tests do): its Node language host (@pulumi/pulumi cmd/run) compiles it with ts-node, the vendored 7.0.1 here,
 * with the tsconfig Pulumi.yaml names (tsconfig.pulumi.json: the project's, transpile-only), as CommonJS.
 * test/fixtures/engineHost.cjs runs that very entry point with the SDK's mocks in place of the engine, in a copy of the
 * project (a fresh clone, with the CA bundle a team downloads), on a fixture stack's config as the language host hands
 * it over. An import only tsx can resolve fails here instead of at the first real preview; a type error fails with
 * the project's tsconfig.json (ts-node's type-check, what `npm run lint` runs with tsc).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { copyProject } from "../support/projectCopy";
import { runProcess } from "../support/processes";
import { fixtureStack } from "../fixtures/stacks";
import { planOf, resourceKeys } from "../fixtures/plan";

// Next to the run's temporary folder, not in it (as test/components/checkouts.e2e.test.ts keeps its copies).
const dir = fs.mkdtempSync(`${os.tmpdir().replace(/[\\/]+$/, "")}-engine-load-`);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const copy = path.join(dir, "project");

/** A copy of the project with the CA bundle step 5 of "From clone to first up" downloads. */
function checkout(root: string): void {
  copyProject(root, { nodeModules: "hardlink" });
  fs.mkdirSync(path.join(root, "certs"), { recursive: true });
  fs.writeFileSync(
    path.join(root, "certs", "rds-global-bundle.pem"),
    "-----BEGIN CERTIFICATE-----\nMIIBstand-in\n-----END CERTIFICATE-----\n",
  );
}

interface HostRun {
  code: number | null;
  resources: string[];
  stderr: string;
}

/** Pulumi.yaml's runtime option `tsconfig`, as the language host hands it to the program. */
function tsconfigOption(): Record<string, string> {
  const project = YAML.parse(fs.readFileSync(path.join(copy, "Pulumi.yaml"), "utf8")) as {
    runtime: { options?: { tsconfig?: string } };
  };
  const tsconfig = project.runtime.options?.tsconfig;
  return tsconfig ? { PULUMI_NODEJS_TSCONFIG_PATH: tsconfig } : {};
}

/** The language host's run of the copy's program for stack `stack`, its config in the environment. */
async function engineRun(stack: "qa" | "prod", options: { typeCheck?: boolean } = {}): Promise<HostRun> {
  const { config, secretKeys } = fixtureStack(stack);
  const env: NodeJS.ProcessEnv = {};
  // Nothing of this process's loaders or ts-node settings: the host starts a plain node.
  for (const [k, v] of Object.entries(process.env)) if (!/^(NODE_OPTIONS|TS_NODE_|PULUMI_|VITEST)/.test(k)) env[k] = v;
  Object.assign(env, {
    PULUMI_NODEJS_TYPESCRIPT: "true",
    PULUMI_NODEJS_PROJECT: "hub-export",
    PULUMI_NODEJS_STACK: stack,
    PULUMI_CONFIG: JSON.stringify(config),
    PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(secretKeys),
    // A cache of its own: every file compiled (and checked, when asked), as on a machine's first run.
    TS_NODE_CACHE_DIRECTORY: fs.mkdtempSync(path.join(dir, "ts-node-")),
    // Type-checked: the project's own tsconfig.json, as without Pulumi.yaml's option.
    ...(options.typeCheck ? {} : tsconfigOption()),
  });
  const { code, stdout, stderr } = await runProcess(
    process.execPath,
    [path.join(copy, "test", "fixtures", "engineHost.cjs")],
    { cwd: copy, env },
  );
  try {
    const report = JSON.parse(stdout.trim().split("\n").pop() ?? "") as { code: number; resources: string[] };
    return { code: code ?? report.code, resources: report.resources, stderr };
  } catch {
    return { code, resources: [], stderr: `${stderr}\n${stdout}` };
  }
}

describe("the program as the engine loads it", () => {
  beforeAll(() => checkout(copy));

  it("compiles through @pulumi/pulumi's language host as Pulumi.yaml has it and registers what the offline plan does", async () => {
    const [host, plan] = await Promise.all([engineRun("qa"), planOf(fixtureStack("qa").config, "qa")]);
    expect(host.stderr).not.toMatch(/Unable to compile TypeScript|Cannot find module|unhandled exception/);
    expect(host.code, host.stderr).toBe(0);
    expect(host.resources.length).toBeGreaterThan(100);
    expect([...host.resources].sort()).toEqual(resourceKeys(plan));
  }, 900_000);

  // The host's failures, on an entry point of a few lines (type-checking the whole program again takes minutes).
  async function withEntryPoint(files: Record<string, string>, check: () => Promise<void>): Promise<void> {
    const index = path.join(copy, "index.ts");
    const original = fs.readFileSync(index, "utf8");
    for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(copy, file), text);
    try {
      await check();
    } finally {
      fs.writeFileSync(index, original);
      for (const file of Object.keys(files)) if (file !== "index.ts") fs.rmSync(path.join(copy, file));
    }
  }

  it("skips the type-check by default; with tsconfig.json, fails on a type error, naming the file and line", async () => {
    await withEntryPoint(
      { "index.ts": 'const notANumber: number = "text";\nexport = () => ({ notANumber });\n' },
      async () => {
        const [host, typeChecked] = await Promise.all([engineRun("qa"), engineRun("qa", { typeCheck: true })]);
        expect(host.code, host.stderr).toBe(0);
        expect(typeChecked.code).not.toBe(0);
        expect(typeChecked.stderr).toMatch(
          /Unable to compile TypeScript:\s*\n?.*index\.ts\(1,7\): error TS2322: Type 'string' is not assignable to type 'number'/,
        );
        // Nothing of the program ran: only the root stack was registered.
        expect(typeChecked.resources).toEqual(["pulumi:pulumi:Stack hub-export-qa"]);
      },
    );
  }, 300_000);

  it("fails on an import the engine's loader cannot resolve, though tsc and tsx accept it", async () => {
    // A `.js` specifier for a `.ts` module (nodenext style): tsc maps it, tsx too, ts-node 7 under `pulumi up` does not.
    const files = {
      "entry-part.ts": "export const part = 1;\n",
      "index.ts": 'import { part } from "./entry-part.js";\nexport = () => ({ part });\n',
    };
    await withEntryPoint(files, async () => {
      const host = await engineRun("qa");
      const tsc = path.join(copy, "node_modules", "typescript", "bin", "tsc");
      execFileSync(
        process.execPath,
        [
          tsc,
          "--noEmit",
          "--strict",
          "--module",
          "nodenext",
          "--moduleResolution",
          "nodenext",
          "--types",
          "node",
          "index.ts",
          "entry-part.ts",
        ],
        { cwd: copy },
      );
      expect(host.code).not.toBe(0);
      expect(host.stderr).toMatch(/Cannot find module '\.\/entry-part\.js'/);
    });
  }, 300_000);
});
