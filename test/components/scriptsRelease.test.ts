/** `hubExport:scriptsRelease`: the release's files go to the shared scripts folder with `pulumi up`; a bad zip stops the program. */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import yazl from "yazl";
import { repoStack } from "../fixtures/stacks";
import { inputs, ofType, planOf } from "../fixtures/plan";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-stack-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The qa stack with hubExport:scriptsRelease set, in engine form. */
const withRelease = (zip: string) => ({ ...repoStack("qa").config, "hubExport:scriptsRelease": JSON.stringify({ zip }) });

async function writeZip(file: string, files: Record<string, string>): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  await new Promise<void>((resolve, reject) => zip.outputStream.pipe(fs.createWriteStream(file)).on("close", () => resolve()).on("error", reject));
  return file;
}

describe("a vendor scripts release in a stack", () => {
  it("uploads the release's files into Tools/hub_python_scripts/, folder structure kept, never the credential files", async () => {
    const zip = await writeZip(path.join(dir, "hub_python_scripts.zip"), { "export_hub.py": "print('x')\n", "lib/hub_client.py": "C = 1\n", "credentials.ini": "[warehouse]\n" });
    const run = await planOf(withRelease(zip));
    const objects = new Map(ofType(run, "aws:s3/bucketObjectv2:BucketObjectv2").map((r) => [inputs(r).key, r]));
    for (const [key, text] of [["Tools/hub_python_scripts/export_hub.py", "print('x')\n"], ["Tools/hub_python_scripts/lib/hub_client.py", "C = 1\n"]]) {
      expect(Buffer.from(inputs(objects.get(key)!).contentBase64, "base64").toString()).toBe(text);
      expect(objects.get(key)!.options.retainOnDelete).toBe(true);
    }
    expect(objects.has("Tools/hub_python_scripts/credentials.ini")).toBe(false);
  });

  it("stops before declaring anything when the zip has a zip-slip entry", async () => {
    const placeholder = "x".repeat("../evil.py".length);
    const file = await writeZip(path.join(dir, "evil.zip"), { [placeholder]: "owned" });
    fs.writeFileSync(file, Buffer.from(fs.readFileSync(file).toString("latin1").split(placeholder).join("../evil.py"), "latin1"));
    await expect(planOf(withRelease(file))).rejects.toThrow(/entry '\.\.\/evil\.py' has a '\.\.' segment: refused/);
  });
});
