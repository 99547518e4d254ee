/**
 * A no-op preview from any checkout: the program registers the same inputs, provider inputs and outputs whichever
 * folder it runs from. Two copies of the project at different paths plan the stacks (the fixtures, with a CA bundle,
 * the CLS exports and a scripts release, the inputs that name files) and every input is compared; neither plan may
 * hold the path of its checkout.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import yazl from "yazl";
import { PROJECT_ROOT } from "../support/cli";
import { copyProject } from "../support/projectCopy";
import { runProcess } from "../support/processes";
import { fixtureStackFile, type FixtureStack } from "../fixtures/stacks";

// Next to the run's temporary folder, not in it: tests that read every file of that folder (embeddedPostgres.test.ts)
// need not go through two copies of node_modules. A killed run's copies go with its folder (test/support/runFolder.ts).
const dir = fs.mkdtempSync(`${os.tmpdir().replace(/[\\/]+$/, "")}-checkouts-`);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const CA_BUNDLE = "-----BEGIN CERTIFICATE-----\nMIIBstand-in\n-----END CERTIFICATE-----\n";

async function zipBytes(files: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  // A fixed time: the same bytes in both checkouts.
  for (const [name, content] of Object.entries(files))
    zip.addBuffer(Buffer.from(content), name, { mtime: new Date(Date.UTC(2026, 10, 1)) });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A copy of the project at `root`, with the files a team adds: a CA bundle and a vendor scripts release. */
function checkout(root: string, release: Buffer): string {
  copyProject(root, { nodeModules: "hardlink" });
  fs.mkdirSync(path.join(root, "certs"), { recursive: true });
  fs.writeFileSync(path.join(root, "certs", "rds-global-bundle.pem"), CA_BUNDLE);
  fs.mkdirSync(path.join(root, "releases"), { recursive: true });
  fs.writeFileSync(path.join(root, "releases", "hub_python_scripts.zip"), release);
  for (const stack of ["qa", "prod"]) {
    const doc = YAML.parse(fs.readFileSync(stackFile(root, stack), "utf8")) as { config: Record<string, unknown> };
    doc.config["hubExport:scriptsRelease"] = { zip: "releases/hub_python_scripts.zip" };
    fs.writeFileSync(stackFile(root, stack), YAML.stringify(doc));
  }
  return root;
}

/** The copy's fixture of `stack` (test/fixtures/stacks/): its paths are relative to the project, as a stack file's. */
const stackFile = (root: string, stack: string) =>
  path.join(root, path.relative(PROJECT_ROOT, fixtureStackFile(stack as FixtureStack)));

async function plan(root: string, stack: string): Promise<string> {
  const r = await runProcess(
    process.execPath,
    [path.join(root, "test", "fixtures", "planDump.cjs"), stackFile(root, stack)],
    {
      cwd: root,
    },
  );
  if (r.code !== 0) throw new Error(`plan of ${stack} in ${root} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

describe("plans from two checkouts", () => {
  const roots: string[] = [];
  beforeAll(async () => {
    const release = await zipBytes({ "export_hub.py": "print('hub')\n", "lib/hub_client.py": "C = 1\n" });
    roots.push(
      checkout(path.join(dir, "a", "hub-export"), release),
      checkout(path.join(dir, "b", "ci", "runner", "work", "repo"), release),
    );
  });

  it.each(["qa", "prod"])(
    "register identical inputs, provider inputs and outputs for stack %s, naming neither folder",
    async (stack) => {
      const [a, b] = await Promise.all(roots.map((root) => plan(root, stack)));
      for (const [root, text] of [
        [roots[0], a],
        [roots[1], b],
      ]) {
        expect(text.includes(root), `the plan from ${root} names its folder`).toBe(false);
        expect(text.includes(PROJECT_ROOT), `the plan from ${root} names the original project's folder`).toBe(false);
      }
      const [planA, planB] = [JSON.parse(a), JSON.parse(b)] as {
        resources: { urn: string; type: string; inputs: Record<string, unknown> }[];
      }[];
      expect(planA.resources.length).toBeGreaterThan(50);
      // Every input of every resource (providers included), one by one for a readable failure, then everything.
      const byUrn = new Map(planB.resources.map((r) => [r.urn, r]));
      for (const r of planA.resources) expect(byUrn.get(r.urn)?.inputs, r.urn).toEqual(r.inputs);
      expect(planA).toEqual(planB);
      // The inputs that name files are there, as paths relative to the project.
      const postgres = planA.resources.find((r) => r.type === "pulumi:providers:postgresql")!;
      expect(postgres.inputs.sslrootcert).toBe("certs/rds-global-bundle.pem");
      const release = planA.resources.find((r) => r.type === "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles")!;
      expect(release.inputs.zipPath).toBe("releases/hub_python_scripts.zip");
    },
    240_000,
  );
});
