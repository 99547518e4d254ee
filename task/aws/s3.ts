/** The S3 adapter: reads one object as text. Loaded only when a location is an s3:// URL. */
import { UserError } from "../../core/errors";

export interface S3Location {
  bucket: string;
  key: string;
}

export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]+)\/(.*)$/.exec(url);
  if (!m || !m[1]) throw new UserError(`'${url}' is not an s3://bucket/key URL`);
  return { bucket: m[1], key: m[2] };
}

/** The object's text, or undefined when it does not exist. */
export async function readS3Text(location: S3Location): Promise<string | undefined> {
  // Required here, not imported: the SDK is only loaded when a run reads from S3.
  const { S3Client, GetObjectCommand } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const client = new S3Client({});
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: location.bucket, Key: location.key }));
    return await out.Body!.transformToString("utf8");
  } catch (err) {
    const name = (err as { name?: string }).name;
    if (name === "NoSuchKey" || name === "NotFound") return undefined;
    throw new UserError(
      `cannot read s3://${location.bucket}/${location.key}: ${name ?? "error"}: ${(err as Error).message}`,
    );
  } finally {
    client.destroy();
  }
}
