/**
 * `hubExport:scriptsRelease`: one resource makes the shared scripts folder's content the release's with `pulumi up`,
 * its state the manifest and not the content; a bad zip stops the program.
 */
import { afterAll, describe, expect, it } from "vitest";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import yazl from "yazl";
import { fixtureStack } from "../fixtures/stacks";
import { PROJECT_ROOT } from "../../config/load";
import { inputs, one, ofType, planOf } from "../fixtures/plan";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-stack-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The qa stack with hubExport:scriptsRelease set (a path in the project: this test's folder is in it), in engine form. */
const withRelease = (zip: string) => ({
  ...fixtureStack("qa").config,
  "hubExport:scriptsRelease": JSON.stringify({ zip: path.relative(PROJECT_ROOT, zip) }),
});

async function writeZip(file: string, files: Record<string, string>): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  await new Promise<void>((resolve, reject) =>
    zip.outputStream
      .pipe(fs.createWriteStream(file))
      .on("close", () => resolve())
      .on("error", reject),
  );
  return file;
}

describe("a vendor scripts release in a stack", () => {
  it("declares one retained resource over Tools/hub_python_scripts/ holding the release's manifest, applied before the credential files", async () => {
    const zip = await writeZip(path.join(dir, "hub_python_scripts.zip"), {
      "export_hub.py": "print('x')\n",
      "lib/hub_client.py": "C = 1\n",
      "credentials.ini": "[warehouse]\n",
    });
    const run = await planOf(withRelease(zip));
    const release = one(run, "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles");
    const sha = (data: string | Buffer) => crypto.createHash("sha256").update(data).digest("hex");
    expect(inputs(release)).toMatchObject({
      location: { kind: "s3", prefix: "Tools/hub_python_scripts/" },
      zipPath: path.relative(PROJECT_ROOT, zip),
      sha256: sha(fs.readFileSync(zip)),
      files: { "export_hub.py": sha("print('x')\n"), "lib/hub_client.py": sha("C = 1\n") },
      keep: [
        "credentials.ini",
        "tenant_credentials.txt",
        "credentials_template.ini",
        "tenant_credentials_template.txt",
      ],
    });
    expect(release.options.retainOnDelete).toBe(true);
    expect(one(run, "hubExport:storage:ScriptsRelease").parent).toBe(one(run, "hubExport:index:HubExport").urn);
    // No object per release file: the content never enters the state.
    const keys = ofType(run, "aws:s3/bucketObjectv2:BucketObjectv2").map((r) => inputs(r).key);
    expect(keys.filter((k: string) => /export_hub|hub_client|credentials\.ini$/.test(k))).toEqual([]);
    expect(JSON.stringify(inputs(release))).not.toContain("print(");
    // The credential files are created from the templates the folder has once the release is in.
    expect(one(run, "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries").dependsOn).toEqual(
      expect.arrayContaining([release.urn]),
    );
  });

  it("leaves a template the release brings to the release: the stack writes no object of its own there", async () => {
    const zip = await writeZip(path.join(dir, "with-template.zip"), {
      "export_hub.py": "1",
      "credentials_template.ini": "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n",
    });
    const run = await planOf(withRelease(zip));
    const keys = ofType(run, "pulumi-nodejs:dynamic/hubExport:SharedObject").map((r) => inputs(r).key);
    expect(keys).not.toContain("Tools/hub_python_scripts/credentials_template.ini");
    expect(keys).toContain("Tools/hub_python_scripts/tenant_credentials_template.txt");
    expect(inputs(one(run, "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles")).keep).toEqual([
      "credentials.ini",
      "tenant_credentials.txt",
      "tenant_credentials_template.txt",
    ]);
  });

  it("stops before declaring anything when the zip has a zip-slip entry", async () => {
    const placeholder = "x".repeat("../evil.py".length);
    const file = await writeZip(path.join(dir, "evil.zip"), { [placeholder]: "owned" });
    fs.writeFileSync(
      file,
      Buffer.from(fs.readFileSync(file).toString("latin1").split(placeholder).join("../evil.py"), "latin1"),
    );
    await expect(planOf(withRelease(file))).rejects.toThrow(/entry '\.\.\/evil\.py' has a '\.\.' segment: refused/);
  });
});
