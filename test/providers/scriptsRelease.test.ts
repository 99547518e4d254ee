/**
 * A vendor scripts release (procedure step 7.1): read with yauzl, folder structure kept, the platform's credential
 * files never taken from it, and zip-slip entries (absolute paths, `..`, backslashes, symbolic links) refused. Applied,
 * it makes the shared folder's content exactly the release's: in a local folder, and in S3 against the loopback S3 API
 * (test/support/s3.ts) through the AWS SDK, with the dynamic provider's own methods.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import yazl from "yazl";
import {
  applyScriptsRelease,
  keptScriptFiles,
  releaseManifest,
  scriptsReleaseProvider,
  SCRIPTS_RELEASE_PROVIDER_VERSION,
  type ScriptsReleaseState,
} from "../../providers/scriptsRelease";
import { isScriptsReleaseError, readScriptsRelease, unsafeEntryName } from "../../core/scriptsRelease";
import { loadScriptsRelease, PROJECT_ROOT } from "../../config/load";
import { UserError } from "../../core/errors";
import { startS3Emulator, type S3Emulator } from "../support/s3";

/** A zip of `files` (name → content); `mode` per name for special entries. */
function zipOf(files: Record<string, string>, mode: Record<string, number> = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files))
    zip.addBuffer(Buffer.from(content), name, mode[name] ? { mode: mode[name] } : {});
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream
      .on("data", (c: Buffer) => chunks.push(c))
      .on("end", () => resolve(Buffer.concat(chunks)))
      .on("error", reject);
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
    expect(release.files.map((f) => f.name)).toEqual([
      "credentials_template.ini",
      "export_hub.py",
      "lib/hub_client.py",
    ]);
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
    expect(isScriptsReleaseError(error)).toBe(true);
    expect((error as Error).message).toBe(
      `hub_python_scripts.zip: entry '${name}' ${problem}: refused, it would be written outside /Tools/hub_python_scripts (nothing was written)`,
    );
    expect(unsafeEntryName(name)).toBe(problem);
  });

  it("refuses a symbolic link, and a file that is not a zip", async () => {
    const link = await zipOf({ "ok.py": "1", "link.py": "/etc/passwd" }, { "link.py": 0o120777 });
    await expect(readScriptsRelease(link, "r.zip")).rejects.toThrow(
      "r.zip: entry 'link.py' is a symbolic link: refused (nothing was written)",
    );
    // Two entries of one name (renamed in place, as yazl writes no such zip): which would win is not for us to guess.
    const twice = Buffer.from(
      (await zipOf({ "lib/a.py": "1", "lib/b.py": "2" })).toString("latin1").split("lib/b.py").join("lib/a.py"),
      "latin1",
    );
    await expect(readScriptsRelease(twice, "r.zip")).rejects.toThrow(
      "r.zip: entry 'lib/a.py' appears twice: refused (nothing was written)",
    );
    await expect(readScriptsRelease(Buffer.from("not a zip"), "r.zip")).rejects.toThrow(
      /^r\.zip: not a readable zip file/,
    );
  });

  it("replaces the local scripts folder's content, keeping the platform's files and templates", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-"));
    try {
      // Another writer is merging tenant_credentials.txt right now (scriptFiles.ts): its lock and temporary file stay.
      const merging = { "tenant_credentials.txt.lock": "", "tenant_credentials.txt.4242.tmp": "{}" };
      for (const [name, content] of Object.entries({
        "credentials.ini": "mine",
        "tenant_credentials.txt": "{}",
        "credentials_template.ini": "t",
        "old_script.py": "old",
        "old/nested.py": "old",
        ...merging,
      })) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        fs.writeFileSync(path.join(dir, name), content);
      }
      const release = await readScriptsRelease(
        await zipOf({ "export_hub.py": "new", "lib/hub_client.py": "new", "credentials.ini": "vendor" }),
        "r.zip",
      );
      const done = await applyScriptsRelease({ kind: "folder", dir }, release, keptScriptFiles(release));
      expect(done).toEqual({ written: 2, deleted: ["old/nested.py", "old_script.py"] });
      const files = (sub: string): string[] =>
        fs
          .readdirSync(path.join(dir, sub), { withFileTypes: true })
          .flatMap((e) => (e.isDirectory() ? files(path.join(sub, e.name)) : [path.join(sub, e.name)]));
      expect(files("").sort()).toEqual(
        [
          "credentials.ini",
          "credentials_template.ini",
          "export_hub.py",
          path.join("lib", "hub_client.py"),
          "tenant_credentials.txt",
          ...Object.keys(merging),
        ].sort(),
      );
      // The emptied folder is gone too.
      expect(fs.existsSync(path.join(dir, "old"))).toBe(false);
      expect(fs.readFileSync(path.join(dir, "credentials.ini"), "utf8")).toBe("mine");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("pulumi refresh of a local folder sees a changed file by its content", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-read-"));
    try {
      const zip = await zipOf({ "export_hub.py": "print('v1')\n", "lib/hub_client.py": "V = 1\n" });
      const release = await readScriptsRelease(zip, "r.zip");
      const zipPath = path.join(dir, "r.zip");
      fs.writeFileSync(zipPath, zip);
      const folderDir = path.join(dir, "scripts");
      const inputs: ScriptsReleaseState = {
        location: { kind: "folder", dir: folderDir },
        zipPath,
        source: "r.zip",
        sha256: release.sha256,
        files: releaseManifest(release),
        keep: keptScriptFiles(release),
        version: SCRIPTS_RELEASE_PROVIDER_VERSION,
      };
      const created = await scriptsReleaseProvider.create(inputs);
      expect((await scriptsReleaseProvider.read!(created.id, created.outs)).props).toEqual(inputs);
      fs.writeFileSync(path.join(folderDir, "lib", "hub_client.py"), "V = 2\n");
      const read = await scriptsReleaseProvider.read!(created.id, created.outs);
      expect(read.props!.files).toEqual({
        "export_hub.py": inputs.files["export_hub.py"],
        "lib/hub_client.py": sha256(Buffer.from("V = 2\n")),
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is a one-line user error when read from the stack config", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-load-"));
    try {
      const file = path.join(dir, "hub_python_scripts.zip");
      fs.writeFileSync(file, "not a zip");
      const error = await loadScriptsRelease(file).catch((e: Error) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(
        /^hubExport:scriptsRelease\.zip .*hub_python_scripts\.zip: not a readable zip file/,
      );
      await zipFile(file, { "export_hub.py": "x" });
      const loaded = await loadScriptsRelease(file);
      // Relative to the project folder (this test's folder is in it): the same in every checkout's state.
      expect(loaded).toMatchObject({
        zipPath: path.relative(PROJECT_ROOT, file),
        sha256: sha256(fs.readFileSync(file)),
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

const sha256 = (data: Buffer) => crypto.createHash("sha256").update(data).digest("hex");

async function zipFile(file: string, files: Record<string, string>): Promise<Buffer> {
  const zip = await zipOf(files);
  fs.writeFileSync(file, zip);
  return zip;
}

describe("a release applied to the shared scripts folder on S3 (loopback S3 API, AWS SDK)", () => {
  const BUCKET = "platform-qa";
  const PREFIX = "Tools/hub_python_scripts/";
  const KMS = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555";
  const PLATFORM = {
    "credentials.ini": "[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n",
    "tenant_credentials.txt": '{"00000000-0000-4000-8000-00000000000f": "other=="}\n',
  };
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  let s3: S3Emulator;
  let dir: string;
  let stderr: ReturnType<typeof vi.spyOn>;

  const objects = () => s3.buckets.get(BUCKET)!;
  const folder = () =>
    Object.fromEntries(
      [...objects()]
        .filter(([k]) => k.startsWith(PREFIX))
        .map(([k, o]) => [k.slice(PREFIX.length), o.body.toString("utf8")]),
    );
  const put = (name: string, body: string) =>
    objects().set(PREFIX + name, {
      body: Buffer.from(body),
      etag: `"${name}-${body.length}"`,
      contentType: "text/plain",
      lastModified: new Date(),
    });

  /** The resource's inputs for a zip written now, as components/storage/scriptsRelease.ts declares them. */
  async function releaseInputs(name: string, files: Record<string, string>): Promise<ScriptsReleaseState> {
    const zipPath = path.join(dir, name);
    const zip = await zipFile(zipPath, files);
    const release = await readScriptsRelease(zip, name);
    return {
      location: { kind: "s3", bucket: BUCKET, prefix: PREFIX, region: "us-east-1", endpoint: s3.url, kmsKeyArn: KMS },
      zipPath,
      source: `hubExport:scriptsRelease.zip ${name}`,
      sha256: release.sha256,
      files: releaseManifest(release),
      keep: keptScriptFiles(release),
      version: SCRIPTS_RELEASE_PROVIDER_VERSION,
    };
  }

  beforeAll(async () => {
    // The SDK signs requests; the emulator does not check signatures.
    process.env.AWS_ACCESS_KEY_ID = "test";
    process.env.AWS_SECRET_ACCESS_KEY = "test";
    s3 = await startS3Emulator({ buckets: [BUCKET] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-release-s3-"));
    stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  });
  afterAll(async () => {
    stderr?.mockRestore();
    await s3?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    for (const [key, value] of [
      ["AWS_ACCESS_KEY_ID", saved.id],
      ["AWS_SECRET_ACCESS_KEY", saved.secret],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  beforeEach(() => {
    objects().clear();
    // The folder as a platform environment has it: its marker, the platform's credential files, the templates the
    // stack wrote, and scripts of an earlier release.
    objects().set(PREFIX, {
      body: Buffer.alloc(0),
      etag: '"d41d8cd98f00b204e9800998ecf8427e"',
      contentType: "application/x-directory",
      lastModified: new Date(),
    });
    for (const [name, body] of Object.entries({
      ...PLATFORM,
      "credentials_template.ini": "stack template\n",
      "tenant_credentials_template.txt": "{}\n",
      "old_script.py": "old\n",
      "old/nested.py": "old\n",
    }))
      put(name, body);
  });

  it("makes the folder's content the release's: subfolders kept, old files deleted, the platform's files untouched, SSE-KMS; the state holds no content", async () => {
    const inputs = await releaseInputs("release1.zip", {
      "export_hub.py": "print('v1')\n",
      "lib/hub_client.py": "V = 1\n",
      "credentials.ini": "[warehouse]\nwarehouse_connection = VENDOR\n",
    });
    const platformObjects = PLATFORM_KEYS.map((k) => objects().get(PREFIX + k));
    const created = await scriptsReleaseProvider.create(inputs);
    expect(created.id).toBe(`s3://${BUCKET}/${PREFIX}`);
    expect(folder()).toEqual({
      "": "",
      ...PLATFORM,
      "credentials_template.ini": "stack template\n",
      "tenant_credentials_template.txt": "{}\n",
      "export_hub.py": "print('v1')\n",
      "lib/hub_client.py": "V = 1\n",
    });
    // The platform's files are the very objects they were (never written).
    expect(PLATFORM_KEYS.map((k) => objects().get(PREFIX + k))).toEqual(platformObjects);
    for (const name of ["export_hub.py", "lib/hub_client.py"])
      expect(objects().get(PREFIX + name)).toMatchObject({ sse: "aws:kms", kmsKeyId: KMS });
    // The manifest, not the content: names and sha256s.
    expect(created.outs).toEqual(inputs);
    expect(inputs.files).toEqual({
      "export_hub.py": sha256(Buffer.from("print('v1')\n")),
      "lib/hub_client.py": sha256(Buffer.from("V = 1\n")),
    });
    expect(JSON.stringify(created.outs)).not.toContain("print(");
  });

  it("a second release removing a file deletes it; its templates replace the stack's; the credential files survive", async () => {
    const v1 = await releaseInputs("release1.zip", {
      "export_hub.py": "print('v1')\n",
      "lib/hub_client.py": "V = 1\n",
      "lib/retired.py": "R = 1\n",
    });
    await scriptsReleaseProvider.create(v1);
    const v2 = await releaseInputs("release2.zip", {
      "hub_python_scripts/export_hub.py": "print('v2')\n",
      "hub_python_scripts/lib/hub_client.py": "V = 2\n",
      "hub_python_scripts/credentials_template.ini": "vendor template\n",
      "hub_python_scripts/tenant_credentials.txt": "{}",
    });
    expect(await scriptsReleaseProvider.diff!("id", v1, v2)).toEqual({ changes: true });
    await scriptsReleaseProvider.update!("id", v1, v2);
    expect(folder()).toEqual({
      "": "",
      ...PLATFORM,
      "credentials_template.ini": "vendor template\n",
      "tenant_credentials_template.txt": "{}\n",
      "export_hub.py": "print('v2')\n",
      "lib/hub_client.py": "V = 2\n",
    });
    expect(String(stderr.mock.calls.at(-1)?.[0])).toMatch(
      /release2\.zip \(sha256 [0-9a-f]{12}…\): 3 files written, deleted as not in the release: lib\/retired\.py$/m,
    );
  });

  it("refuses a bad zip, or a zip changed since the plan, clearly and changing nothing", async () => {
    const before = folder();
    const inputs = await releaseInputs("release.zip", { "export_hub.py": "print(1)\n" });
    // Another zip at the same path since the program planned with it.
    await zipFile(inputs.zipPath, { "export_hub.py": "print(2)\n" });
    await expect(scriptsReleaseProvider.create(inputs)).rejects.toThrow(
      /^hubExport:scriptsRelease\.zip release\.zip: the zip changed since this 'pulumi up' planned with it .*nothing was changed, run it again$/,
    );
    // A zip-slip entry (yazl refuses to write one: a harmless name of the same length, renamed in place).
    const slip = Buffer.from(
      (await zipOf({ "ok.py": "1", xxxxxxxxxx: "owned" })).toString("latin1").split("xxxxxxxxxx").join("../evil.py"),
      "latin1",
    );
    fs.writeFileSync(inputs.zipPath, slip);
    await expect(scriptsReleaseProvider.create({ ...inputs, sha256: sha256(slip) })).rejects.toThrow(
      "hubExport:scriptsRelease.zip release.zip: entry '../evil.py' has a '..' segment: refused, it would be written outside /Tools/hub_python_scripts (nothing was written)",
    );
    // Not a zip at all.
    fs.writeFileSync(inputs.zipPath, "not a zip");
    await expect(
      scriptsReleaseProvider.update!("id", inputs, { ...inputs, sha256: sha256(Buffer.from("not a zip")) }),
    ).rejects.toThrow(/^hubExport:scriptsRelease\.zip release\.zip: not a readable zip file/);
    expect(folder()).toEqual(before);
  });

  it("passes check during a first preview, with the bucket and key still unknown", async () => {
    const inputs = await releaseInputs("release.zip", { "export_hub.py": "print(1)\n" });
    // What the engine hands a dynamic provider for a value not known yet.
    const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const preview = {
      ...inputs,
      location: { kind: "s3" as const, bucket: unknown, prefix: PREFIX, region: "us-east-1", kmsKeyArn: unknown },
    };
    expect(await scriptsReleaseProvider.check!(inputs, preview)).toEqual({ inputs: preview });
    expect(await scriptsReleaseProvider.diff!("id", inputs, preview)).toEqual({ changes: true });
    expect((await scriptsReleaseProvider.check!(inputs, { ...inputs, sha256: "x", files: {} })).failures).toEqual([
      { property: "sha256", reason: "must be the zip's sha256 (64 hex digits)" },
      { property: "files", reason: "must list the release's files" },
    ]);
  });

  it("pulumi refresh sees a file changed, removed or added by hand (HeadObject, a listing), and the next up applies the release again", async () => {
    const inputs = await releaseInputs("release1.zip", {
      "export_hub.py": "print('v1')\n",
      "lib/hub_client.py": "V = 1\n",
    });
    const created = await scriptsReleaseProvider.create(inputs);
    // Each object carries its sha256 as written.
    expect(objects().get(PREFIX + "export_hub.py")!.metadata).toEqual({
      "hub-export-sha256": inputs.files["export_hub.py"],
    });
    // Nothing changed: the state as it was, and no drift for the next up.
    const same = await scriptsReleaseProvider.read!(created.id, created.outs);
    expect(same).toEqual({ id: created.id, props: inputs, inputs });
    expect(await scriptsReleaseProvider.diff!(created.id, same.props!, inputs)).toEqual({ changes: false });

    // By hand: one script replaced (a console upload: no metadata), one deleted, one added; the platform's untouched.
    put("export_hub.py", "print('patched')\n");
    objects().delete(PREFIX + "lib/hub_client.py");
    put("hotfix.py", "print('hot')\n");
    const read = await scriptsReleaseProvider.read!(created.id, created.outs);
    expect(read.props).toEqual({ ...inputs, files: { "export_hub.py": "changed" }, extra: ["hotfix.py"] });
    expect(read.inputs).toEqual(read.props);
    // The next `up`: its diff against the refreshed state applies the release again, which makes it whole.
    expect(await scriptsReleaseProvider.diff!(created.id, read.props!, inputs)).toEqual({ changes: true });
    const updated = await scriptsReleaseProvider.update!(created.id, read.props!, inputs);
    expect(updated.outs).toEqual(inputs);
    expect(folder()).toMatchObject({ "export_hub.py": "print('v1')\n", "lib/hub_client.py": "V = 1\n", ...PLATFORM });
    expect(folder()).not.toHaveProperty("hotfix.py");
    expect((await scriptsReleaseProvider.read!(created.id, updated.outs)).props).toEqual(inputs);
  });

  it("diffs on the zip's sha256, not its path; deleting the resource leaves the shared folder as it is", async () => {
    const inputs = await releaseInputs("release.zip", { "export_hub.py": "print(1)\n" });
    expect(
      await scriptsReleaseProvider.diff!("id", inputs, { ...inputs, zipPath: "/elsewhere/hub_python_scripts.zip" }),
    ).toEqual({ changes: false });
    expect(
      await scriptsReleaseProvider.diff!("id", inputs, {
        ...inputs,
        location: { ...inputs.location, kind: "s3", bucket: "platform-prod", prefix: PREFIX },
      }),
    ).toEqual({ changes: true });
    await scriptsReleaseProvider.create(inputs);
    const applied = folder();
    await scriptsReleaseProvider.delete!("id", inputs);
    expect(folder()).toEqual(applied);
  });
});

const PLATFORM_KEYS = ["credentials.ini", "tenant_credentials.txt"];
