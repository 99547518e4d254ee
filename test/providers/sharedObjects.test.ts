/**
 * The platform environment's shared objects (folder markers, the template of a build, the scripts templates) against
 * S3 on loopback, their provider's methods called as the engine calls them: created only where the key is absent,
 * never overwritten, never deleted; a refresh sees one deleted by hand; a new KMS key re-encrypts only what the stack
 * created under its old one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { S3Emulator } from "../support/s3";
import {
  sharedObjectProvider,
  SHARED_OBJECT_PROVIDER_VERSION,
  type SharedObjectState,
} from "../../providers/sharedObjects";
import { createResource, deleteResource, refreshResource, updateResource, type Step } from "../support/engine";
import { startLoopbackS3 } from "../support/loopbackAws";

const BUCKET = "platform-qa";
const KMS = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555";
const KMS_NEW = "arn:aws:kms:us-east-1:123456789012:key/99999999-8888-7777-6666-555555555555";
const VENDOR_KMS = "arn:aws:kms:us-east-1:123456789012:key/vendor";
const TEMPLATE = "Tools/hub_python_scripts/credentials_template.ini";
const VENDOR_TEMPLATE = "[warehouse]\r\nwarehouse_connection = <set me>\r\n; the vendor's own comment\r\n";

let s3: S3Emulator;
beforeAll(async () => {
  s3 = await startLoopbackS3({ buckets: [BUCKET] });
});
afterAll(async () => {
  await s3?.close();
});

const objects = () => s3.buckets.get(BUCKET)!;
const ours = (key: string, content: string, kmsKeyArn = KMS): SharedObjectState => ({
  location: { kind: "s3", bucket: BUCKET, prefix: "", region: "us-east-1", endpoint: s3.url, kmsKeyArn },
  key,
  content,
  contentType: "text/plain",
  version: SHARED_OBJECT_PROVIDER_VERSION,
});

describe("shared objects", () => {
  it("leave the vendor's object as it is, byte for byte, through create, update and delete", async () => {
    objects().clear();
    objects().set(TEMPLATE, {
      body: Buffer.from(VENDOR_TEMPLATE),
      etag: '"vendor"',
      contentType: "text/x-ini",
      lastModified: new Date(0),
      sse: "aws:kms",
      kmsKeyId: VENDOR_KMS,
    });
    const before = { ...objects().get(TEMPLATE)! };
    const created = await createResource(
      sharedObjectProvider,
      ours(TEMPLATE, "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n"),
    );
    expect(created.id).toBe(`s3://${BUCKET}/${TEMPLATE}`);
    expect(created.state.created).toBe(false);
    const steps: Step[] = [];
    const updated = await updateResource(
      sharedObjectProvider,
      created,
      { ...ours(TEMPLATE, "changed template", KMS_NEW) },
      steps,
    );
    expect(steps).toEqual(["update"]);
    await deleteResource(sharedObjectProvider, updated);
    expect(objects().get(TEMPLATE)).toEqual(before);
    expect(s3.requests.filter((r) => r.method === "DELETE")).toEqual([]);
  });

  it("create an absent object (a folder marker too) with the stack's key, never delete it, and create it again once deleted by hand", async () => {
    objects().clear();
    const marker = await createResource(sharedObjectProvider, ours("Tools/hub_python_scripts/", ""));
    const template = await createResource(sharedObjectProvider, ours(TEMPLATE, "[warehouse]\n"));
    expect(template.state.created).toBe(true);
    expect(objects().get(TEMPLATE)).toMatchObject({
      body: Buffer.from("[warehouse]\n"),
      sse: "aws:kms",
      kmsKeyId: KMS,
    });
    expect(objects().get("Tools/hub_python_scripts/")!.body.length).toBe(0);
    await deleteResource(sharedObjectProvider, template);
    await deleteResource(sharedObjectProvider, marker);
    expect([...objects().keys()].sort()).toEqual(["Tools/hub_python_scripts/", TEMPLATE]);

    // Refresh: there, then deleted by hand (read by HeadObject, no body).
    s3.requests.length = 0;
    expect(await refreshResource(sharedObjectProvider, template)).toEqual(template);
    expect(s3.requests.map((r) => r.method)).toEqual(["HEAD"]);
    objects().delete(TEMPLATE);
    expect(await refreshResource(sharedObjectProvider, template)).toBeUndefined();
    // The engine forgets it; the next `up` creates it.
    expect((await createResource(sharedObjectProvider, ours(TEMPLATE, "[warehouse]\n"))).state.created).toBe(true);
    // Without a refresh, an update (a new template) creates it where it is gone, and leaves it where it is.
    objects().delete(TEMPLATE);
    const v2 = await updateResource(sharedObjectProvider, template, ours(TEMPLATE, "[warehouse] v2\n"));
    expect(objects().get(TEMPLATE)!.body.toString("utf8")).toBe("[warehouse] v2\n");
    await updateResource(sharedObjectProvider, v2, ours(TEMPLATE, "[warehouse] v3\n"));
    expect(objects().get(TEMPLATE)!.body.toString("utf8")).toBe("[warehouse] v2\n");
  });

  it("re-encrypt under a new key only what the stack created under its old one, byte for byte", async () => {
    objects().clear();
    objects().set("templates/hub_hrsys_export/", {
      body: Buffer.alloc(0),
      etag: '"m"',
      contentType: "application/x-directory",
      lastModified: new Date(0),
      sse: "aws:kms",
      kmsKeyId: VENDOR_KMS,
    });
    const vendors = await createResource(sharedObjectProvider, ours("templates/hub_hrsys_export/", ""));
    const mine = await createResource(sharedObjectProvider, ours(TEMPLATE, "[warehouse]\n"));
    await updateResource(sharedObjectProvider, vendors, ours("templates/hub_hrsys_export/", "", KMS_NEW));
    await updateResource(sharedObjectProvider, mine, ours(TEMPLATE, "[warehouse]\n", KMS_NEW));
    expect(objects().get("templates/hub_hrsys_export/")!.kmsKeyId).toBe(VENDOR_KMS);
    expect(objects().get(TEMPLATE)).toMatchObject({ body: Buffer.from("[warehouse]\n"), kmsKeyId: KMS_NEW });
  });

  it("another bucket or key is another object: the old one is left", async () => {
    const olds = ours(TEMPLATE, "x");
    expect(
      await sharedObjectProvider.diff!("id", olds, {
        ...olds,
        location: { ...olds.location, kmsKeyArn: KMS_NEW, region: "eu-west-1" } as SharedObjectState["location"],
      }),
    ).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
    expect((await sharedObjectProvider.diff!("id", olds, { ...olds, key: "other" })).replaces).toEqual(["key"]);
    expect(
      (
        await sharedObjectProvider.diff!("id", olds, {
          ...olds,
          location: { ...olds.location, bucket: "other" } as SharedObjectState["location"],
        })
      ).replaces,
    ).toEqual(["location"]);
    expect((await sharedObjectProvider.diff!("id", olds, { ...olds })).changes).toBe(false);
  });
});
