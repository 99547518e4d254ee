/**
 * The shared scripts folder against a real S3 API on loopback (test/support/s3.ts, through the AWS SDK): files created from
 * their templates when absent, only this stack's entries added, updated and removed, other entries and unknown keys
 * left alone, and two stacks writing at once losing nothing (conditional writes on the ETag, retried).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startS3Emulator, type S3Emulator } from "../support/s3";
import {
  applyScriptFiles,
  mergeCredentialsIni,
  mergeTenantCredentials,
  scriptFilesProvider,
  SCRIPT_FILES_PROVIDER_VERSION,
  type ScriptFilesState,
} from "../../providers/scriptFiles";
import { CREDENTIALS_INI_TEMPLATE, TENANT_CREDENTIALS_TEMPLATE } from "../../core/credentialFiles";
import {
  annotateSecrets,
  createResource,
  deleteResource,
  exposedSecrets,
  refreshResource,
  secret,
  updateResource,
  type Deployed,
  type Step,
} from "../support/engine";

const BUCKET = "platform-qa";
const PREFIX = "Tools/hub_python_scripts/";
const A = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
const B = "7a2d4f6b-8c1e-4a3b-b5d7-9e0f2a4c6e8b";
const OTHER = "00000000-0000-4000-8000-00000000000f";
const KMS = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555";

let s3: S3Emulator;
let delayGets = 0;
const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

beforeAll(async () => {
  // The SDK signs requests; the emulator does not check signatures.
  process.env.AWS_ACCESS_KEY_ID = "test";
  process.env.AWS_SECRET_ACCESS_KEY = "test";
  s3 = await startS3Emulator({
    buckets: [BUCKET],
    beforeAnswer: async ({ method }) => {
      if (method === "GET" && delayGets) await new Promise((r) => setTimeout(r, delayGets));
    },
  });
});
afterAll(async () => {
  await s3?.close();
  process.env.AWS_ACCESS_KEY_ID = saved.id;
  process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
  if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
  if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
});

const objects = () => s3.buckets.get(BUCKET)!;
const text = (name: string) =>
  objects()
    .get(PREFIX + name)
    ?.body.toString("utf8");
const put = (name: string, body: string) =>
  objects().set(PREFIX + name, {
    body: Buffer.from(body),
    etag: `"${name}-${body.length}"`,
    contentType: "text/plain",
    lastModified: new Date(),
  });

function resetFolder(): void {
  objects().clear();
  put("credentials_template.ini", CREDENTIALS_INI_TEMPLATE);
  put("tenant_credentials_template.txt", TENANT_CREDENTIALS_TEMPLATE);
}

function stack(entries: Record<string, string>, warehouseConnection = "PLAT_WAREHOUSE_QA"): ScriptFilesState {
  return {
    location: { kind: "s3", bucket: BUCKET, prefix: PREFIX, region: "us-east-1", endpoint: s3.url, kmsKeyArn: KMS },
    warehouseConnection,
    entries,
    version: SCRIPT_FILES_PROVIDER_VERSION,
  };
}

afterEach(() => {
  delayGets = 0;
});

describe("the shared scripts folder on S3", () => {
  it("creates both files from their templates when absent, placeholders replaced, SSE-KMS under the stack's key", async () => {
    resetFolder();
    const created = await scriptFilesProvider.create(stack({ [A]: "cred-a==" }));
    expect(created.id).toBe(`s3://${BUCKET}/${PREFIX}`);
    expect(text("credentials.ini")).toBe("[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n");
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({ [A]: "cred-a==" });
    for (const name of ["credentials.ini", "tenant_credentials.txt"])
      expect(objects().get(PREFIX + name)).toMatchObject({ sse: "aws:kms", kmsKeyId: KMS });
    // The templates stay as they were.
    expect(text("credentials_template.ini")).toBe(CREDENTIALS_INI_TEMPLATE);
  });

  it("adds, updates and removes only its own entries; other pipelines' entries and unknown keys stay", async () => {
    resetFolder();
    put("tenant_credentials.txt", JSON.stringify({ [OTHER]: "other-pipeline==", comment: { note: "kept" } }, null, 2));
    put(
      "credentials.ini",
      "; shared by the hub pipelines\n[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n\n[extra]\nkey = value\n",
    );
    const v1 = stack({ [A]: "cred-a==", [B]: "cred-b==" });
    await scriptFilesProvider.create(v1);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({
      [OTHER]: "other-pipeline==",
      comment: { note: "kept" },
      [A]: "cred-a==",
      [B]: "cred-b==",
    });
    expect(text("credentials.ini")).toBe(
      "; shared by the hub pipelines\n[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n\n[extra]\nkey = value\n",
    );

    // A rotated secret and a removed tenant: an update.
    const v2 = stack({ [A]: "cred-a-rotated==" });
    expect((await scriptFilesProvider.diff!("id", v1, v2)).changes).toBe(true);
    await scriptFilesProvider.update!("id", v1, v2);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({
      [OTHER]: "other-pipeline==",
      comment: { note: "kept" },
      [A]: "cred-a-rotated==",
    });

    // The stack is removed: its entries go, the rest stays; credentials.ini is shared and stays.
    await scriptFilesProvider.delete!("id", v2);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({
      [OTHER]: "other-pipeline==",
      comment: { note: "kept" },
    });
    expect(text("credentials.ini")).toContain("warehouse_connection = PLAT_WAREHOUSE_QA");
  });

  it("two stacks writing at once lose nothing: the second write fails its condition and is retried", async () => {
    resetFolder();
    const before = s3.answers[412] ?? 0;
    // Both read the folder before either writes.
    delayGets = 60;
    await Promise.all([applyScriptFiles(stack({ [A]: "cred-a==" })), applyScriptFiles(stack({ [B]: "cred-b==" }))]);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({ [A]: "cred-a==", [B]: "cred-b==" });
    expect((s3.answers[412] ?? 0) - before).toBeGreaterThan(0);
  });

  it("refuses another pipeline's database connection name in credentials.ini, and a file that is not JSON, writing nothing", async () => {
    resetFolder();
    put("credentials.ini", "[warehouse]\nwarehouse_connection = OTHER_WAREHOUSE\n");
    await expect(scriptFilesProvider.create(stack({ [A]: "cred-a==" }))).rejects.toThrow(
      "credentials.ini in the shared scripts folder sets warehouse_connection = OTHER_WAREHOUSE, but this stack's database connection is PLAT_WAREHOUSE_QA",
    );
    expect(text("tenant_credentials.txt")).toBeUndefined();
    resetFolder();
    put("tenant_credentials.txt", "{ not json");
    await expect(scriptFilesProvider.create(stack({ [A]: "cred-a==" }))).rejects.toThrow(
      "tenant_credentials.txt in the shared scripts folder is not valid JSON",
    );
    expect(text("tenant_credentials.txt")).toBe("{ not json");
  });

  it("needs the templates to create an absent file (procedure step 7.2)", async () => {
    objects().clear();
    await expect(scriptFilesProvider.create(stack({ [A]: "cred-a==" }))).rejects.toThrow(
      `s3://${BUCKET}/${PREFIX}credentials_template.ini is missing`,
    );
  });
});

describe("surviving the stack's own changes (the engine's steps, against S3)", () => {
  const KMS_NEW = "arn:aws:kms:us-east-1:123456789012:key/99999999-8888-7777-6666-555555555555";
  const VENDOR_KMS = "arn:aws:kms:us-east-1:123456789012:key/vendor";
  const at = (
    state: ScriptFilesState,
    location: Partial<Extract<ScriptFilesState["location"], { kind: "s3" }>>,
  ): ScriptFilesState => ({
    ...state,
    location: { ...(state.location as Extract<ScriptFilesState["location"], { kind: "s3" }>), ...location },
  });
  /** Every version of tenant_credentials.txt the folder holds while `run` runs, read after each S3 answer. */
  async function watchEntries(run: () => Promise<unknown>, prefix = PREFIX): Promise<Record<string, string>[]> {
    const seen: Record<string, string>[] = [];
    const timer = setInterval(() => {
      const body = objects()
        .get(prefix + "tenant_credentials.txt")
        ?.body.toString("utf8");
      seen.push(body ? JSON.parse(body) : {});
    }, 1);
    try {
      await run();
    } finally {
      clearInterval(timer);
    }
    return seen;
  }

  it("a new KMS key or region of the same folder is an update: the entries never leave the file; files it encrypted are re-encrypted, others left", async () => {
    resetFolder();
    put("tenant_credentials.txt", JSON.stringify({ [OTHER]: "other-pipeline==" }));
    objects().get(PREFIX + "tenant_credentials.txt")!.kmsKeyId = VENDOR_KMS;
    const v1 = await createResource(scriptFilesProvider, stack({ [A]: "cred-a==" }));
    expect(objects().get(PREFIX + "credentials.ini")!.kmsKeyId).toBe(KMS);

    const steps: Step[] = [];
    let v2!: Deployed<ScriptFilesState>;
    const seen = await watchEntries(async () => {
      v2 = await updateResource(scriptFilesProvider, v1, at(v1.state, { kmsKeyArn: KMS_NEW }), steps);
    });
    expect(steps).toEqual(["update"]);
    for (const entries of seen) expect(entries).toMatchObject({ [A]: "cred-a==", [OTHER]: "other-pipeline==" });
    // credentials.ini was encrypted with the stack's old key: the same bytes, under the new one. tenant_credentials.txt
    // was merged into (so written with the stack's key); the other pipeline's entry is as it was.
    expect(objects().get(PREFIX + "credentials.ini")).toMatchObject({ kmsKeyId: KMS_NEW });
    expect(text("credentials.ini")).toBe("[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n");
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({ [OTHER]: "other-pipeline==", [A]: "cred-a==" });

    // A file under someone else's key that the change leaves as it is keeps its key.
    objects().get(PREFIX + "credentials.ini")!.kmsKeyId = VENDOR_KMS;
    const v3 = await updateResource(
      scriptFilesProvider,
      v2,
      at(v2.state, { kmsKeyArn: KMS, region: "eu-west-1" }),
      steps,
    );
    expect(steps).toEqual(["update", "update"]);
    expect(objects().get(PREFIX + "credentials.ini")!.kmsKeyId).toBe(VENDOR_KMS);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({ [OTHER]: "other-pipeline==", [A]: "cred-a==" });
    await deleteResource(scriptFilesProvider, v3);
  });

  it("in a preview, a key not known yet (created in the same up) is an update too; only another folder replaces", async () => {
    // What the engine hands a dynamic provider's diff for a value a preview cannot know.
    const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const olds = stack({ [A]: "cred-a==" });
    expect(await scriptFilesProvider.diff!("id", olds, at(olds, { kmsKeyArn: UNKNOWN }))).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(await scriptFilesProvider.diff!("id", olds, at(olds, { prefix: "Tools/other/" }))).toEqual({
      changes: true,
      replaces: ["location"],
      deleteBeforeReplace: true,
    });
    expect(await scriptFilesProvider.diff!("id", olds, at(olds, { prefix: "Tools/hub_python_scripts" }))).toMatchObject(
      { replaces: [] },
    );
  });

  it("another folder is replaced delete-first: the old folder's entries are released, the new folder gets them", async () => {
    resetFolder();
    const other = "Tools/hub_python_scripts_v2/";
    for (const [name, body] of [
      ["credentials_template.ini", CREDENTIALS_INI_TEMPLATE],
      ["tenant_credentials_template.txt", TENANT_CREDENTIALS_TEMPLATE],
    ]) {
      objects().set(other + name, {
        body: Buffer.from(body),
        etag: `"${name}"`,
        contentType: "text/plain",
        lastModified: new Date(),
      });
    }
    put("tenant_credentials.txt", JSON.stringify({ [OTHER]: "other-pipeline==" }));
    const v1 = await createResource(scriptFilesProvider, stack({ [A]: "cred-a==" }));
    const steps: Step[] = [];
    const v2 = await updateResource(scriptFilesProvider, v1, at(v1.state, { prefix: other }), steps);
    expect(steps).toEqual(["replace (delete first)"]);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({ [OTHER]: "other-pipeline==" });
    expect(
      JSON.parse(
        objects()
          .get(other + "tenant_credentials.txt")!
          .body.toString("utf8"),
      ),
    ).toEqual({ [A]: "cred-a==" });
    expect(v2.state.location).toMatchObject({ prefix: other });
  });

  it("renaming the database connection updates this stack's own value in credentials.ini; another pipeline's value is still refused", async () => {
    resetFolder();
    put("credentials.ini", "; shared\n[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA\n[other]\nkey = kept\n");
    const v1 = await createResource(scriptFilesProvider, stack({ [A]: "cred-a==" }));
    const v2 = await updateResource(scriptFilesProvider, v1, stack({ [A]: "cred-a==" }, "PLAT_WAREHOUSE_QA_RENAMED"));
    expect(text("credentials.ini")).toBe(
      "; shared\n[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_QA_RENAMED\n[other]\nkey = kept\n",
    );
    // Someone else sets another value meanwhile: this stack's next change refuses to overwrite it.
    put("credentials.ini", "[warehouse]\nwarehouse_connection = SOMEONE_ELSES\n");
    await expect(
      updateResource(scriptFilesProvider, v2, stack({ [A]: "cred-a==" }, "PLAT_WAREHOUSE_QA_AGAIN")),
    ).rejects.toThrow(
      /sets warehouse_connection = SOMEONE_ELSES, but this stack's database connection is PLAT_WAREHOUSE_QA_AGAIN/,
    );
    expect(text("credentials.ini")).toBe("[warehouse]\nwarehouse_connection = SOMEONE_ELSES\n");
  });

  it("read() shows a hand-made deletion on refresh, and the next up puts it back; another pipeline's value is never adopted", async () => {
    resetFolder();
    put("tenant_credentials.txt", JSON.stringify({ [OTHER]: "other-pipeline==" }));
    const v1 = await createResource(scriptFilesProvider, stack({ [A]: "cred-a==", [B]: "cred-b==" }));
    expect(await refreshResource(scriptFilesProvider, v1)).toEqual(v1);
    // Someone removes one of this stack's entries and changes the connection name by hand.
    put("tenant_credentials.txt", JSON.stringify({ [OTHER]: "other-pipeline==", [B]: "cred-b==" }));
    const refreshed = (await refreshResource(scriptFilesProvider, v1))!;
    expect(refreshed.state.entries).toEqual({ [B]: "cred-b==" });
    // Still secret after the read: the engine re-marks the entries, secret as a whole in the old state, by their name;
    // no credentials string is under another name.
    const kept = annotateSecrets(refreshed.state as unknown as Record<string, unknown>, {
      ...v1.state,
      entries: secret(v1.state.entries),
    });
    expect(kept.entries).toEqual(secret({ [B]: "cred-b==" }));
    expect(exposedSecrets(kept, ["cred-a==", "cred-b==", "other-pipeline=="])).toEqual([]);
    const steps: Step[] = [];
    await updateResource(scriptFilesProvider, refreshed, stack({ [A]: "cred-a==", [B]: "cred-b==" }), steps);
    expect(steps).toEqual(["update"]);
    expect(JSON.parse(text("tenant_credentials.txt")!)).toEqual({
      [OTHER]: "other-pipeline==",
      [B]: "cred-b==",
      [A]: "cred-a==",
    });

    put("credentials.ini", "[warehouse]\nwarehouse_connection = SOMEONE_ELSES\n");
    const drifted = (await refreshResource(scriptFilesProvider, v1))!;
    expect(drifted.state.warehouseConnection).toBe("");
    await expect(
      updateResource(scriptFilesProvider, drifted, stack({ [A]: "cred-a==", [B]: "cred-b==" })),
    ).rejects.toThrow(/sets warehouse_connection = SOMEONE_ELSES/);
  });
});

describe("merging", () => {
  it("keeps entries in place, matches tenant ids whatever their case, drops the template's placeholder", () => {
    const text = JSON.stringify({ "<hub tenant id>": "<CREDENTIALS_STRING>", [OTHER]: "x", [A.toUpperCase()]: "old" });
    expect(JSON.parse(mergeTenantCredentials(text, { [A]: "new" }))).toEqual({ [OTHER]: "x", [A]: "new" });
    expect(Object.keys(JSON.parse(mergeTenantCredentials(text, { [A]: "new", [B]: "b" })))).toEqual([OTHER, A, B]);
  });

  it("sets warehouse_connection where the template has its placeholder, or adds it", () => {
    expect(mergeCredentialsIni(CREDENTIALS_INI_TEMPLATE, "DB")).toBe("[warehouse]\nwarehouse_connection = DB\n");
    expect(mergeCredentialsIni("[other]\nk = v\n", "DB")).toBe(
      "[other]\nk = v\n\n[warehouse]\nwarehouse_connection = DB\n",
    );
    expect(mergeCredentialsIni("[warehouse]\n# comment\n", "DB")).toBe(
      "[warehouse]\nwarehouse_connection = DB\n# comment\n",
    );
  });
});

describe("the same files in a local folder (the embedded default)", () => {
  it("merges with a lock file, and a held lock makes a writer retry", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-scripts-"));
    try {
      fs.writeFileSync(path.join(dir, "credentials_template.ini"), CREDENTIALS_INI_TEMPLATE);
      fs.writeFileSync(path.join(dir, "tenant_credentials_template.txt"), TENANT_CREDENTIALS_TEMPLATE);
      fs.writeFileSync(path.join(dir, "tenant_credentials.txt.lock"), "");
      const location = { kind: "folder" as const, dir };
      // The lock goes once a writer has found it held (not after a time): that writer must try again.
      const lock = path.join(dir, "tenant_credentials.txt.lock");
      let refused = 0;
      const openSync = fs.openSync;
      const spy = vi.spyOn(fs, "openSync").mockImplementation((...args: Parameters<typeof fs.openSync>) => {
        try {
          return openSync(...args);
        } catch (err) {
          if (args[0] === lock && (err as NodeJS.ErrnoException).code === "EEXIST" && ++refused === 1) fs.rmSync(lock);
          throw err;
        }
      });
      try {
        await Promise.all([
          applyScriptFiles({ location, warehouseConnection: "DB", entries: { [A]: "a==" } }),
          applyScriptFiles({ location, warehouseConnection: "DB", entries: { [B]: "b==" } }),
        ]);
      } finally {
        spy.mockRestore();
      }
      expect(refused).toBeGreaterThan(0);
      expect(JSON.parse(fs.readFileSync(path.join(dir, "tenant_credentials.txt"), "utf8"))).toEqual({
        [A]: "a==",
        [B]: "b==",
      });
      expect(fs.statSync(path.join(dir, "tenant_credentials.txt")).mode & 0o777).toBe(0o600);
      expect(fs.readdirSync(dir).sort()).toEqual([
        "credentials.ini",
        "credentials_template.ini",
        "tenant_credentials.txt",
        "tenant_credentials_template.txt",
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
