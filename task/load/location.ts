/** Where the task reads its inputs: a local path or an s3:// URL (the definition, the scripts folder). */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../../core/errors";

export function isS3(location: string): boolean {
  return location.startsWith("s3://");
}

/** The text at a location, or undefined when nothing is there. */
export async function readLocation(location: string): Promise<string | undefined> {
  if (isS3(location)) {
    const { parseS3Url, readS3Text } = await import("../aws/s3.js");
    return readS3Text(parseS3Url(location));
  }
  try {
    return fs.readFileSync(location, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    throw new UserError(`cannot read ${location}: ${code ?? (err as Error).message}`);
  }
}

/** A file inside a folder location: `dir/name` or `s3://bucket/prefix/name`. */
export function childLocation(folder: string, name: string): string {
  if (isS3(folder)) return folder.endsWith("/") ? folder + name : `${folder}/${name}`;
  return path.join(folder, name);
}
