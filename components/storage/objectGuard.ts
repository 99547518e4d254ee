/**
 * The ownership guard of an adopted bucket: before the stack writes a key that exists, its tags must name this stack
 * (`hub-export:stack = <project>/<stack>`), or the run stops naming the object; the objects' `bucket` input waits for
 * it. HeadObject and GetObjectTagging only, never a body, so a read-only preview role can run it
 * (docs/pulumi-reference.md, "IAM"); the stack provider's credentials and account check (providers/awsAccess.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { awsAccessFromConfig, awsClientCredentials, type AwsAccess } from "../../providers/awsAccess";

export const OWNER_TAG = "hub-export:stack";

/** The tag value that marks an object as this stack's. */
export function ownerTagValue(): string {
  return `${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** What the guard learns of objects: the tags of each key that exists (absent keys are left out). Never a body. */
export interface ObjectInspector {
  tagsOf(bucket: string, region: string, keys: string[]): Promise<Record<string, Record<string, string>>>;
}

/** The stack's `aws:` config as the program's engine holds it. */
function stackAwsAccess(): AwsAccess {
  const config = pulumi.runtime.allConfig();
  return awsAccessFromConfig((key) => config[key]);
}

/**
 * The real one: HeadObject, then GetObjectTagging for a key that exists, with the AWS SDK and the stack's `aws:` config.
 * Every call of one inspector uses the credentials it resolved first (and their account check).
 */
export function s3ObjectInspector(access: AwsAccess = stackAwsAccess()): ObjectInspector {
  return {
    async tagsOf(bucket, region, keys) {
      const { S3Client, HeadObjectCommand, GetObjectTaggingCommand } =
        require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
      const stack = awsClientCredentials(access, region);
      // The stack's credentials and account first: a refusal names them, not an S3 permission.
      await stack.credentials?.().catch((err: Error) => {
        throw new pulumi.RunError(`cannot check s3://${bucket}/ before writing to it: ${err.message}`);
      });
      const client = new S3Client({ region, ...stack });
      const problem = (key: string, call: string, needs: string, err: unknown) => {
        const e = err as { name?: string; message?: string };
        return new pulumi.RunError(
          `cannot check s3://${bucket}/${key} before writing it (${call}: ${e.name ?? "error"}: ${e.message ?? String(err)}); the guard of an adopted bucket needs ${needs}`,
        );
      };
      const found: Record<string, Record<string, string>> = {};
      try {
        for (const key of keys) {
          try {
            await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
          } catch (err) {
            if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) continue;
            throw problem(
              key,
              "HeadObject",
              "s3:ListBucket on the bucket and s3:GetObject on the key (HeadObject reads no body)",
              err,
            );
          }
          try {
            const tagging = await client.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: key }));
            found[key] = Object.fromEntries((tagging.TagSet ?? []).map((t) => [t.Key ?? "", t.Value ?? ""]));
          } catch (err) {
            throw problem(key, "GetObjectTagging", "s3:GetObjectTagging on the key", err);
          }
        }
      } finally {
        client.destroy();
      }
      return found;
    },
  };
}

/** Offline: the SDK's mocks answer this invoke from their account's objects (components/planner/mocks.ts). */
export const OFFLINE_OBJECT_TAGS_TOKEN = "hubExport:offline:getObjectTags";

export function offlineObjectInspector(opts: pulumi.InvokeOptions = {}): ObjectInspector {
  return {
    async tagsOf(bucket, region, keys) {
      const result = (await pulumi.runtime.invoke(OFFLINE_OBJECT_TAGS_TOKEN, { bucket, region, keys }, opts)) as {
        found?: Record<string, Record<string, string>>;
      };
      return result.found ?? {};
    },
  };
}

/** Keys of `existing` (key → tags) whose owner tag is not `owner`. */
export function foreignKeys(existing: Record<string, Record<string, string> | undefined>, owner: string): string[] {
  return Object.entries(existing)
    .filter(([, tags]) => tags?.[OWNER_TAG] !== owner)
    .map(([key]) => key)
    .sort();
}

/** Keys of `keys` that already exist in `bucket` as someone else's objects. */
export async function foreignObjects(
  inspector: ObjectInspector,
  bucket: string,
  region: string,
  keys: string[],
  owner: string,
): Promise<string[]> {
  if (keys.length === 0) return [];
  return foreignKeys(await inspector.tagsOf(bucket, region, keys), owner);
}

/** The error that stops the run: names each object and the ways out. */
export function foreignObjectsMessage(bucket: string, foreign: string[], owner: string): string {
  return (
    `bucket ${bucket} is adopted (hubExport:bucket.create: false) and already holds ${foreign.map((k) => `s3://${bucket}/${k}`).join(", ")}, not created by stack ${owner}: ` +
    "nothing was written. Move the object away, or adopt it first with 'pulumi import aws:s3/bucketObjectv2:BucketObjectv2 <resource name> <bucket>/<key>' and tag it " +
    `${OWNER_TAG}=${owner}`
  );
}

/**
 * The bucket name, resolved only once none of `keys` exists in the bucket as someone else's object. Otherwise the
 * objects' registration fails with the message, and the run stops before any of them is written.
 */
export function guardedBucketName(
  bucketName: pulumi.Output<string>,
  region: pulumi.Input<string>,
  keys: string[],
  inspector: ObjectInspector,
): pulumi.Output<string> {
  const owner = ownerTagValue();
  return pulumi.all([bucketName, region]).apply(async ([bucket, where]) => {
    const foreign = await foreignObjects(inspector, bucket, where, keys, owner);
    if (foreign.length > 0) throw new pulumi.RunError(foreignObjectsMessage(bucket, foreign, owner));
    return bucket;
  });
}
