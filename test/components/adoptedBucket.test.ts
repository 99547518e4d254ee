/**
 * Objects in an adopted bucket (prod: `bucket.create: false`): the stack never overwrites an object it did not create,
 * and retains its own on delete. The guard reads tags only (HeadObject, GetObjectTagging), never a body: against the
 * loopback S3 through the AWS SDK, and under mocks with objects already in the bucket.
 */
import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProgramUnderMocks } from "../../components/planner";
import type { MockAccount } from "../../components/planner/mocks";
import { hubExportProgram } from "../../components/program";
import {
  foreignKeys,
  foreignObjects,
  foreignObjectsMessage,
  offlineObjectInspector,
  OFFLINE_OBJECT_TAGS_TOKEN,
  OWNER_TAG,
  ownerTagValue,
  s3ObjectInspector,
} from "../../components/storage/objectGuard";
import { startS3Emulator, type S3Emulator } from "../support/s3";
import { startLoopbackS3 } from "../support/loopbackAws";
import { fixtureStack } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH, inputs, ofType } from "../fixtures/plan";

const BUCKET = "acme-platform-prod";
const SCRIPTS = `${BUCKET}/Tools/hub_python_scripts`;
const OWN = { [OWNER_TAG]: "hub-export/prod" };
/** This job's rendered pipeline: an object of this stack alone (the templates are shared by every pipeline). */
const PIPELINE = "pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_ACME_202611_PROD.Json";
const CHECKLIST = "hub-configuration/HRSYS_EMPL_HUB_ACME_202611_PROD/HUB_CHECKLIST.md";

/** The guard's check alone, under mocks with these objects in the bucket: the message that would stop the run, or the bucket. */
async function guard(existingObjects: MockAccount["existingObjects"], keys: string[]): Promise<string> {
  let result = "not run";
  await runProgramUnderMocks({
    stack: "prod",
    config: {},
    account: { existingObjects },
    program: async () => {
      const owner = ownerTagValue();
      const foreign = await foreignObjects(offlineObjectInspector(), BUCKET, "us-east-1", keys, owner);
      result = foreign.length ? foreignObjectsMessage(BUCKET, foreign, owner) : BUCKET;
      return {};
    },
  });
  return result;
}

describe("an adopted bucket", () => {
  const keys = [PIPELINE, CHECKLIST];

  it("stops the run before writing when a key the stack would write holds someone else's object", async () => {
    const error = await guard(
      { [`${BUCKET}/${PIPELINE}`]: { owner: "platform-release" }, [`${SCRIPTS}/unrelated.py`]: {} },
      keys,
    );
    expect(error).toBe(
      `bucket acme-platform-prod is adopted (hubExport:bucket.create: false) and already holds s3://acme-platform-prod/${PIPELINE}, ` +
        "not created by stack hub-export/prod: nothing was written. Move the object away, or adopt it first with 'pulumi import aws:s3/bucketObjectv2:BucketObjectv2 <resource name> <bucket>/<key>' " +
        "and tag it hub-export:stack=hub-export/prod",
    );
  });

  it("lets the stack write keys that are free or already its own", async () => {
    expect(await guard({}, keys)).toBe(BUCKET);
    expect(await guard({ [`${BUCKET}/${PIPELINE}`]: OWN, [`${SCRIPTS}/unrelated.py`]: {} }, keys)).toBe(BUCKET);
  });

  it("guards every object of the stack alone, tags each as the stack's and retains each on delete; the shared ones are neither guarded nor overwritten", async () => {
    const invokes: NonNullable<MockAccount["invokes"]> = [];
    const run = await runProgramUnderMocks({
      stack: "prod",
      config: fixtureStack("prod").config,
      account: { existingObjects: { [`${BUCKET}/${PIPELINE}`]: OWN }, invokes },
      program: () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH }),
    });
    const objects = ofType(run, "aws:s3/bucketObjectv2:BucketObjectv2");
    expect(objects.map((o) => inputs(o).key)).toEqual(expect.arrayContaining([PIPELINE, CHECKLIST]));
    // The shared objects are created only where absent (providers/sharedObjects.ts), not written as the stack's own.
    const shared = ofType(run, "pulumi-nodejs:dynamic/hubExport:SharedObject").filter(
      (r) => inputs(r).key === "Tools/hub_python_scripts/credentials_template.ini",
    );
    expect(shared).toHaveLength(1);
    expect(objects.map((o) => inputs(o).key)).not.toContain("Tools/hub_python_scripts/credentials_template.ini");
    const guarded = invokes
      .filter((i) => i.token === OFFLINE_OBJECT_TAGS_TOKEN)
      .flatMap((i) => i.inputs.keys as string[]);
    expect(guarded.sort()).toEqual(objects.map((o) => inputs(o).key).sort());
    expect(invokes.map((i) => i.token)).not.toContain("aws:s3/getObject:getObject");
    for (const o of objects) {
      expect(o.options.retainOnDelete).toBe(true);
      expect(inputs(o).tags).toEqual(OWN);
    }
  });

  it("stops the real program with the guard's message at once, not after the resources waiting on the refused objects", async () => {
    // The refusal is thrown in an apply: the SDK rejects the objects' registrations, and everything that depends on
    // them (the schedule, the stack's outputs) would wait forever.
    const run = runProgramUnderMocks({
      stack: "prod",
      config: fixtureStack("prod").config,
      account: { existingObjects: { [`${BUCKET}/${PIPELINE}`]: { owner: "platform-release" } } },
      program: () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH }),
    });
    const error = (await run.catch((e: unknown) => e)) as Error;
    expect(pulumi.RunError.isInstance(error)).toBe(true);
    expect(error.message).toContain(
      `bucket acme-platform-prod is adopted (hubExport:bucket.create: false) and already holds s3://acme-platform-prod/${PIPELINE}, not created by stack hub-export/prod`,
    );
  });

  it("tells foreign objects from the stack's own by the owner tag", () => {
    expect(
      foreignKeys({ a: OWN, b: { [OWNER_TAG]: "hub-export/qa" }, c: undefined, d: {} }, "hub-export/prod"),
    ).toEqual(["b", "c", "d"]);
  });
});

describe("the guard against S3: HeadObject and GetObjectTagging, never a body", () => {
  let s3: S3Emulator;
  // The SDK's own credential and endpoint chain, as the program uses it; the emulator does not check signatures.
  beforeAll(async () => {
    s3 = await startLoopbackS3({ buckets: [BUCKET] });
  });
  afterAll(async () => {
    await s3?.close();
  });

  it("finds foreign, own and free keys from the tags alone", async () => {
    const put = (key: string, tags: Record<string, string>) =>
      s3.buckets.get(BUCKET)!.set(key, {
        body: Buffer.from('{"secret": "encrypted with a key the preview role may not use"}'),
        etag: '"e"',
        contentType: "application/json",
        lastModified: new Date(),
        sse: "aws:kms",
        kmsKeyId: "arn:aws:kms:us-east-1:123456789012:key/other",
        tags,
      });
    put(PIPELINE, OWN);
    put(CHECKLIST, { owner: "another-client" });
    s3.requests.length = 0;
    const foreign = await foreignObjects(
      s3ObjectInspector(),
      BUCKET,
      "us-east-1",
      [PIPELINE, CHECKLIST, "pipelines/hub_hrsys_export/FREE.Json"],
      "hub-export/prod",
    );
    expect(foreign).toEqual([CHECKLIST]);
    expect(s3.requests.map((r) => `${r.method} ${r.key}${r.subresource ? `?${r.subresource}` : ""}`)).toEqual([
      `HEAD ${PIPELINE}`,
      `GET ${PIPELINE}?tagging`,
      `HEAD ${CHECKLIST}`,
      `GET ${CHECKLIST}?tagging`,
      "HEAD pipelines/hub_hrsys_export/FREE.Json",
    ]);
  });

  it("says which IAM actions it needs when S3 does not answer the lookup", async () => {
    const closed = await startS3Emulator({ buckets: [] });
    process.env.AWS_ENDPOINT_URL_S3 = closed.url;
    await closed.close();
    try {
      const error = await foreignObjects(s3ObjectInspector(), BUCKET, "us-east-1", [PIPELINE], "hub-export/prod").catch(
        (e: Error) => e,
      );
      expect((error as Error).message).toMatch(
        /^cannot check s3:\/\/acme-platform-prod\/.* \(HeadObject: .*\); the guard of an adopted bucket needs s3:ListBucket on the bucket and s3:GetObject on the key \(HeadObject reads no body\)$/,
      );
    } finally {
      process.env.AWS_ENDPOINT_URL_S3 = s3.url;
    }
  });
});
