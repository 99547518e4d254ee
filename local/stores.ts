/** Local stand-ins: a folder for the bucket, a folder of JSON files for the connection-strings collection. */
import fs from "node:fs";
import path from "node:path";
import type { BucketObject } from "../core/bucketObjects";
import { serializeConnectionRecord, type ConnectionRecord } from "../core/connections";
import { connectionFileName } from "../core/naming";
import type { HubConfigurationFile } from "../core/hubConfiguration";
import { makeFolder, PRIVATE_FOLDER_MODE } from "../providers/folders";
import { onFile } from "../core/refusals";

/**
 * Writes each object under `dir` by its key (none holds a secret: the credential files are merged, providers/scriptFiles.ts);
 * shared ones only where absent.
 */
export function writeBucketObjects(dir: string, objects: BucketObject[]): void {
  for (const object of objects) {
    const target = path.join(dir, object.key);
    // The bucket stands in for a private S3 bucket: its folders are the owner's only.
    if (object.folder) {
      makeFolder(target, PRIVATE_FOLDER_MODE);
      continue;
    }
    makeFolder(path.dirname(target), PRIVATE_FOLDER_MODE);
    // The platform environment's shared objects (the template, the scripts templates): written only when absent, as
    // `pulumi up` does (providers/sharedObjects.ts).
    if (!(object.shared && fs.existsSync(target))) writeAtomic(target, object.content, 0o644);
  }
}

/** The hub-configuration folder: the CLS load sheets and the hub checklist (binary-safe). */
export function writeHubConfiguration(dir: string, files: HubConfigurationFile[]): void {
  for (const file of files) {
    const target = path.join(dir, file.key);
    makeFolder(path.dirname(target), PRIVATE_FOLDER_MODE);
    writeAtomic(target, file.body, 0o644);
  }
}

export function writeConnectionRecords(dir: string, records: ConnectionRecord[]): void {
  makeFolder(dir, PRIVATE_FOLDER_MODE);
  for (const record of records)
    writeAtomic(path.join(dir, connectionFileName(record.systemName)), serializeConnectionRecord(record) + "\n", 0o600);
}

/** Write-then-rename, so a killed process never leaves half a file behind; the mode applies to an existing file too. */
export function writeAtomic(file: string, content: string | Buffer, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    // A failed write (a full disk) names the file (core/refusals.ts).
    onFile(file, () => fs.writeFileSync(tmp, content, { mode }));
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}
