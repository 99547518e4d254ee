/**
 * Objects in an adopted bucket (prod: `bucket.create: false`): the stack never overwrites an object it did not create,
 * and retains its own on delete. Under mocks, with objects already in the bucket.
 */
import { describe, expect, it } from "vitest";
import { runProgramUnderMocks } from "../../components/planner";
import type { MockAccount } from "../../components/planner/mocks";
import { hubExportProgram } from "../../components/program";
import { foreignKeys, foreignObjects, foreignObjectsMessage, OWNER_TAG, ownerTagValue } from "../../components/storage/objectGuard";
import { repoStack } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH, inputs, ofType } from "../fixtures/plan";

const BUCKET = "acme-platform-prod";
const SCRIPTS = `${BUCKET}/Tools/hub_python_scripts`;
const OWN = { [OWNER_TAG]: "hub-export/prod" };
/** This job's rendered pipeline: an object of this stack alone (the templates are shared by every pipeline). */
const PIPELINE = "pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_ACME_202611_PROD.Json";

/** The guard's check alone, under mocks with these objects in the bucket: the message that would stop the run, or the bucket. */
async function guard(existingObjects: MockAccount["existingObjects"], keys: string[]): Promise<string> {
  let result = "not run";
  await runProgramUnderMocks({
    stack: "prod",
    config: {},
    account: { existingObjects },
    program: async () => {
      const owner = ownerTagValue();
      const foreign = await foreignObjects(BUCKET, keys, owner, {});
      result = foreign.length ? foreignObjectsMessage(BUCKET, foreign, owner) : BUCKET;
      return {};
    },
  });
  return result;
}

describe("an adopted bucket", () => {
  const keys = ["Tools/hub_python_scripts/credentials_template.ini", "templates/hub_hrsys_export/"];

  it("stops the run before writing when a key the stack would write holds someone else's object", async () => {
    const error = await guard({ [`${SCRIPTS}/credentials_template.ini`]: { owner: "platform-release" }, [`${SCRIPTS}/unrelated.py`]: {} }, keys);
    expect(error).toBe(
      "bucket acme-platform-prod is adopted (hubExport:bucket.create: false) and already holds s3://acme-platform-prod/Tools/hub_python_scripts/credentials_template.ini, " +
        "not created by stack hub-export/prod: nothing was written. Move the object away, or adopt it first with 'pulumi import aws:s3/bucketObjectv2:BucketObjectv2 <resource name> <bucket>/<key>' " +
        "and tag it hub-export:stack=hub-export/prod",
    );
  });

  it("lets the stack write keys that are free or already its own", async () => {
    expect(await guard({}, keys)).toBe(BUCKET);
    expect(await guard({ [`${SCRIPTS}/credentials_template.ini`]: OWN, [`${SCRIPTS}/unrelated.py`]: {} }, keys)).toBe(BUCKET);
  });

  it("guards every object of the stack, tags each as the stack's and retains each on delete", async () => {
    const invokes: NonNullable<MockAccount["invokes"]> = [];
    const run = await runProgramUnderMocks({
      stack: "prod",
      config: repoStack("prod").config,
      account: { existingObjects: { [`${BUCKET}/${PIPELINE}`]: OWN }, invokes },
      program: () => hubExportProgram({ offline: true, taskSourceHash: FIXED_SOURCE_HASH }),
    });
    const objects = ofType(run, "aws:s3/bucketObjectv2:BucketObjectv2");
    expect(objects.map((o) => inputs(o).key)).toEqual(expect.arrayContaining([PIPELINE, "Tools/hub_python_scripts/credentials_template.ini", "hub-configuration/HUB_CHECKLIST.md"]));
    // Every key that is this stack's alone is checked; the shared ones (same content from every pipeline) are not.
    const listed = invokes.filter((i) => i.token === "aws:s3/getObjects:getObjects").map((i) => i.inputs.prefix);
    expect(listed).toEqual(expect.arrayContaining([PIPELINE, "hub-configuration/HUB_CHECKLIST.md"]));
    expect(listed).not.toContain("Tools/hub_python_scripts/credentials_template.ini");
    expect(invokes.filter((i) => i.token === "aws:s3/getObject:getObject").map((i) => i.inputs.key)).toEqual([PIPELINE]);
    for (const o of objects) {
      expect(o.options.retainOnDelete).toBe(true);
      expect(inputs(o).tags).toEqual(OWN);
    }
  });

  it("tells foreign objects from the stack's own by the owner tag", () => {
    expect(foreignKeys({ a: OWN, b: { [OWNER_TAG]: "hub-export/qa" }, c: undefined, d: {} }, "hub-export/prod")).toEqual(["b", "c", "d"]);
  });
});
