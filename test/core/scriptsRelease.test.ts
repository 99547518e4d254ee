/**
 * A vendor scripts release (procedure step 7.1): read with yauzl, folder structure kept, the platform's credential
 * files never taken from it, and zip-slip entries (absolute paths, `..`, backslashes, symbolic links) refused.
 */
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import yazl from "yazl";
import { readScriptsRelease, unsafeEntryName } from "../../core/scriptsRelease";
import { installScriptsRelease } from "../../local/stores";
import { UserError } from "../../core/errors";

/** A zip of `files` (name → content); `mode` per name for special entries. */
function zipOf(files: Record<string, string>, mode: Record<string, number> = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name, mode[name] ? { mode: mode[name] } : {});
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c)).on("end", () => resolve(Buffer.concat(chunks))).on("error", reject);
  });
}

/** yazl refuses to write a malicious name: write a harmless one of the same length, then rename it in place. */
async function maliciousZip(name: string): Promise<Buffer> {
  const placeholder = "x".repeat(name.length);
  const zip = await zipOf({ "ok.py": "print(1)\n", [placeholder]: "owned\n" });
  return Buffer.from(zip.toString("latin1").split(placeholder).join(name), "latin1");
}

describe("a vendor scripts release", () => {
  it("keeps the folder structure, strips the top folder, and never takes credentials.ini or tenant_credentials.txt", async () => {
    const zip = await zipOf({
      "hub_python_scripts/export_hub.py": "print('export')\n",
      "hub_python_scripts/lib/hub_client.py": "CLIENT = 1\n",
      "hub_python_scripts/credentials.ini": "[warehouse]\nwarehouse_connection = VENDOR\n",
      "hub_python_scripts/tenant_credentials.txt": "{}",
      "hub_python_scripts/credentials_template.ini": "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n",
    });
    const release = await readScriptsRelease(zip, "hub_python_scripts.zip");
    expect(release.files.map((f) => f.name)).toEqual(["credentials_template.ini", "export_hub.py", "lib/hub_client.py"]);
    expect(release.files[2].content.toString()).toBe("CLIENT = 1\n");
    expect(release.skipped.sort()).toEqual(["credentials.ini", "tenant_credentials.txt"]);
  });

  it.each([
    ["../evil.py", "has a '..' segment"],
    ["lib/../../x.py", "has a '..' segment"],
    ["/etc/cron.d/x", "is an absolute path"],
    ["C:/Windows/x.py", "starts with a drive letter"],
    ["lib\\..\\x.py", "holds a backslash"],
  ])("refuses the zip-slip entry %s", async (name, problem) => {
    const error = await readScriptsRelease(await maliciousZip(name), "hub_python_scripts.zip").catch((e: Error) => e);
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toBe(`hub_python_scripts.zip: entry '${name}' ${problem}: refused, it would be written outside /Tools/hub_python_scripts (nothing was written)`);
    expect(unsafeEntryName(name)).toBe(problem);
  });

  it("refuses a symbolic link, and a file that is not a zip", async () => {
    const link = await zipOf({ "ok.py": "1", "link.py": "/etc/passwd" }, { "link.py": 0o120777 });
    await expect(readScriptsRelease(link, "r.zip")).rejects.toThrow("r.zip: entry 'link.py' is a symbolic link: refused (nothing was written)");
    await expect(readScriptsRelease(Buffer.from("not a zip"), "r.zip")).rejects.toThrow(/^r\.zip: not a readable zip file/);
  });

  it("replaces the local scripts folder's content, keeping the platform's files and templates", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-"));
    try {
      for (const [name, content] of Object.entries({ "credentials.ini": "mine", "tenant_credentials.txt": "{}", "credentials_template.ini": "t", "old_script.py": "old", "old/nested.py": "old" })) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        fs.writeFileSync(path.join(dir, name), content);
      }
      const release = await readScriptsRelease(await zipOf({ "export_hub.py": "new", "lib/hub_client.py": "new", "credentials.ini": "vendor" }), "r.zip");
      installScriptsRelease(dir, release, ["credentials.ini", "tenant_credentials.txt", "credentials_template.ini"]);
      const files = (sub: string): string[] => fs.readdirSync(path.join(dir, sub), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(sub, e.name)) : [path.join(sub, e.name)]));
      expect(files("").sort()).toEqual(["credentials.ini", "credentials_template.ini", "export_hub.py", path.join("lib", "hub_client.py"), "tenant_credentials.txt"]);
      expect(fs.readFileSync(path.join(dir, "credentials.ini"), "utf8")).toBe("mine");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
