/**
 * Objects in an adopted bucket (`hubExport:bucket.create: false`): the bucket belongs to the platform, and objects
 * this stack did not create are never overwritten. Every object the stack writes carries the tag
 * `hub-export:stack = <project>/<stack>`; before writing a key that already exists, the guard reads its tags and stops
 * the run, naming the object, when the tag is not this stack's. The objects' `bucket` input waits for the guard, so
 * nothing is written before it passed.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export const OWNER_TAG = "hub-export:stack";

/** The tag value that marks an object as this stack's. */
export function ownerTagValue(): string {
  return `${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** Keys of `candidates` that exist with another owner (or none), given each existing key's tags. */
export function foreignKeys(existing: Record<string, Record<string, string> | undefined>, owner: string): string[] {
  return Object.entries(existing)
    .filter(([, tags]) => tags?.[OWNER_TAG] !== owner)
    .map(([key]) => key)
    .sort();
}

/** Keys of `keys` that already exist in `bucket` as someone else's objects (invokes: list, then read the tags). */
export async function foreignObjects(bucket: string, keys: string[], owner: string, opts: pulumi.InvokeOptions): Promise<string[]> {
  const existing: Record<string, Record<string, string> | undefined> = {};
  for (const key of keys) {
    const listed = await aws.s3.getObjects({ bucket, prefix: key, maxKeys: 10 }, opts);
    if (!listed.keys.includes(key)) continue;
    existing[key] = (await aws.s3.getObject({ bucket, key }, opts)).tags;
  }
  return foreignKeys(existing, owner);
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
export function guardedBucketName(bucketName: pulumi.Output<string>, keys: string[], parent: pulumi.Resource): pulumi.Output<string> {
  const owner = ownerTagValue();
  return bucketName.apply(async (bucket) => {
    const foreign = await foreignObjects(bucket, keys, owner, { parent });
    if (foreign.length > 0) throw new pulumi.RunError(foreignObjectsMessage(bucket, foreign, owner));
    return bucket;
  });
}
