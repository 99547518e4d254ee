/**
 * A vendor scripts release (procedure step 7.1): `hub_python_scripts.zip`, checked entry by entry (zip-slip) before
 * anything is written, becomes the shared scripts folder's content, but the credential files. The state holds its
 * manifest (sha256s), never its content. Used by local mode and the dynamic provider behind
 * components/storage/scriptsRelease.ts. Serialized provider code: providers/README.md.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import * as scriptFiles from "./scriptFiles";
import type { S3FolderLocation, ScriptFolderLocation } from "./scriptFiles";
import * as awsAccess from "./awsAccess";
import * as folders from "./folders";
import * as json from "./json";
import * as naming from "../core/naming";
import * as release from "../core/scriptsRelease";
import type { ReleaseFile, ScriptsRelease } from "../core/scriptsRelease";

const { isMissingKey, s3Folder, s3Failure } = scriptFiles;
const { SCRIPT_FILES } = naming;
const { configureAwsAccess } = awsAccess;
const { makeFolder, PRIVATE_FOLDER_MODE } = folders;
const { pick, sha256Hex, stableJson } = json;
const { PROTECTED_SCRIPT_FILES, readScriptsRelease, releaseError } = release;

/** Objects written or deleted at once. */
const PARALLEL = 8;

/**
 * Bump when applying behaves differently, so that `pulumi up` applies the release again. 2: each object carries its
 * sha256 in its user metadata, which `pulumi refresh` reads (HeadObject).
 */
export const SCRIPTS_RELEASE_PROVIDER_VERSION = 2;

/** The user metadata (x-amz-meta-…) that holds an object's sha256 as the release wrote it. */
export const RELEASE_SHA256_METADATA = "hub-export-sha256";
/** A file of the release whose content is not the release's, and whose sha256 the folder does not say. */
export const CHANGED = "changed";

/** The release's manifest: each file's name and the sha256 of its content. */
export function releaseManifest(release: Pick<ScriptsRelease, "files">): Record<string, string> {
  return Object.fromEntries(release.files.map((f) => [f.name, sha256Hex(f.content)]));
}

/** Files of the folder that applying `release` keeps though the release lacks them. */
export function keptScriptFiles(release: Pick<ScriptsRelease, "files">): string[] {
  const names = new Set(release.files.map((f) => f.name));
  return [
    ...PROTECTED_SCRIPT_FILES,
    ...[SCRIPT_FILES.credentialsIniTemplate, SCRIPT_FILES.tenantCredentialsTemplate].filter((t) => !names.has(t)),
  ];
}

/** What applying a release did. */
export interface AppliedRelease {
  written: number;
  /** Names deleted from the folder (not in the release). */
  deleted: string[];
}

/** Runs `work` over `items`, PARALLEL at a time; the first failure stops it. */
async function inParallel<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, lane));
}

/**
 * True for a name the folder keeps: a file of the release or a kept one, a kept file's lock and temporary files
 * (scriptFiles.ts: another writer may be merging it right now); a folder marker (`sub/`) while still used.
 */
function stays(name: string, wanted: Set<string>, keep: readonly string[]): boolean {
  if (name === "" || wanted.has(name) || keep.includes(name)) return true;
  if (keep.some((k) => name === `${k}.lock` || (name.startsWith(`${k}.`) && name.endsWith(".tmp")))) return true;
  return name.endsWith("/") && [...wanted].some((w) => w.startsWith(name));
}

/** The keys under the folder's `prefix`, without it (every page of ListObjectsV2). */
async function listKeys({ client, prefix }: ReturnType<typeof s3Folder>, bucket: string): Promise<string[]> {
  const { paginateListObjectsV2 } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const keys: string[] = [];
  try {
    for await (const page of paginateListObjectsV2({ client }, { Bucket: bucket, Prefix: prefix }))
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key.slice(prefix.length));
  } catch (err) {
    throw s3Failure(`scripts release: cannot list s3://${bucket}/${prefix}`, err);
  }
  return keys;
}

/** The files under `dir`, `/`-separated relative paths. */
function filesIn(dir: string, sub = ""): string[] {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  return fs
    .readdirSync(path.join(dir, sub), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesIn(dir, path.posix.join(sub, e.name)) : [path.posix.join(sub, e.name)]));
}

/** Makes the folder's content the release's: its files written (structure kept), every other one deleted but `keep`. */
export async function applyScriptsRelease(
  location: ScriptFolderLocation,
  release: Pick<ScriptsRelease, "files">,
  keep: readonly string[],
): Promise<AppliedRelease> {
  const wanted = new Set(release.files.map((f) => f.name));
  const unwanted = (present: string[]) => present.filter((name) => !stays(name, wanted, keep)).sort();
  const deleted =
    location.kind === "s3"
      ? await applyToS3(location, release.files, unwanted)
      : applyToFolder(location.dir, release.files, unwanted);
  return { written: release.files.length, deleted };
}

/** Writes the files; deletes and returns the `unwanted` ones of those present. */
async function applyToS3(
  location: S3FolderLocation,
  files: ReleaseFile[],
  unwanted: (present: string[]) => string[],
): Promise<string[]> {
  const { PutObjectCommand, DeleteObjectCommand } =
    require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const folder = s3Folder(location);
  const { client, prefix } = folder;
  const where = `s3://${location.bucket}/${prefix}`;
  const failed = (what: string, err: unknown) => s3Failure(`scripts release: cannot ${what} ${where}`, err);
  const present = await listKeys(folder, location.bucket);
  await inParallel(files, async (file) => {
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: location.bucket,
          Key: prefix + file.name,
          Body: file.content,
          ContentType: "application/octet-stream",
          Metadata: { [RELEASE_SHA256_METADATA]: sha256Hex(file.content) },
          ...(location.kmsKeyArn ? { ServerSideEncryption: "aws:kms", SSEKMSKeyId: location.kmsKeyArn } : {}),
        }),
      );
    } catch (err) {
      throw failed(`write ${file.name} in`, err);
    }
  });
  const deleted = unwanted(present);
  await inParallel(deleted, async (name) => {
    try {
      await client.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: prefix + name }));
    } catch (err) {
      throw failed(`delete ${name} in`, err);
    }
  });
  return deleted;
}

function applyToFolder(dir: string, files: ReleaseFile[], unwanted: (present: string[]) => string[]): string[] {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  makeFolder(dir, PRIVATE_FOLDER_MODE);
  for (const file of files) {
    const target = path.join(dir, ...file.name.split("/"));
    makeFolder(path.dirname(target), PRIVATE_FOLDER_MODE);
    // Write-then-rename, so a killed process never leaves half a file behind.
    const tmp = `${target}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, file.content, { mode: 0o644 });
    fs.renameSync(tmp, target);
  }
  const deleted = unwanted(filesIn(dir));
  for (const name of deleted) fs.rmSync(path.join(dir, ...name.split("/")));
  // Folders the release no longer has, left empty.
  const prune = (sub: string): void => {
    for (const e of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const child = path.join(sub, e.name);
      prune(child);
      if (fs.readdirSync(path.join(dir, child)).length === 0) fs.rmdirSync(path.join(dir, child));
    }
  };
  prune("");
  return deleted;
}

/**
 * What the folder holds of a release: each file of `manifest` that is there, with the sha256 of its content (S3: the
 * one its user metadata says, `changed` where it says none, HeadObject), and the files that are neither the release's
 * nor kept (`extra`). A file the folder lacks is left out.
 */
export async function readReleaseFolder(
  location: ScriptFolderLocation,
  manifest: Record<string, string>,
  keep: readonly string[],
): Promise<{ files: Record<string, string>; extra: string[] }> {
  const wanted = new Set(Object.keys(manifest));
  const files: Record<string, string> = {};
  let present: string[];
  if (location.kind === "s3") {
    const { HeadObjectCommand } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
    const folder = s3Folder(location);
    const { client, prefix } = folder;
    await inParallel(Object.keys(manifest), async (name) => {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: location.bucket, Key: prefix + name }));
        files[name] = head.Metadata?.[RELEASE_SHA256_METADATA] ?? CHANGED;
      } catch (err) {
        if (isMissingKey(err)) return;
        throw s3Failure(`scripts release: cannot read ${name} in s3://${location.bucket}/${prefix}`, err);
      }
    });
    present = await listKeys(folder, location.bucket);
  } else {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    present = fs.existsSync(location.dir) ? filesIn(location.dir) : [];
    for (const name of present)
      if (wanted.has(name)) files[name] = sha256Hex(fs.readFileSync(path.join(location.dir, ...name.split("/"))));
  }
  const extra = present.filter((name) => !stays(name, wanted, keep)).sort();
  return { files, extra };
}

/** The dynamic resource's inputs and outputs: the manifest, never the content. */
export interface ScriptsReleaseState {
  location: ScriptFolderLocation;
  /**
   * Where create and update read the zip (not compared): relative to the project folder, in which Pulumi starts the
   * provider, so that the state is the same from every checkout (an absolute path also works).
   */
  zipPath: string;
  /** hubExport:scriptsRelease.zip as configured, for messages. */
  source: string;
  /** sha256 of the zip: what diff compares. */
  sha256: string;
  /** Each file of the release: its name and the sha256 of its content. */
  files: Record<string, string>;
  /** Files of the folder kept though the release lacks them (keptScriptFiles). */
  keep: string[];
  version: number;
  /** After `pulumi refresh` only: files in the folder that are neither the release's nor kept. */
  extra?: string[];
}

function releaseState(inputs: ScriptsReleaseState): ScriptsReleaseState {
  return pick(inputs, ["location", "zipPath", "source", "sha256", "files", "keep", "version"]);
}

/** Reads the zip the program planned with, checks it is the same, and applies it. */
async function apply(inputs: ScriptsReleaseState): Promise<void> {
  const fs = require("node:fs") as typeof import("node:fs");
  let zip: Buffer;
  try {
    zip = fs.readFileSync(inputs.zipPath);
  } catch (err) {
    throw releaseError(
      `${inputs.source}: cannot read ${inputs.zipPath} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); nothing was changed`,
    );
  }
  const sha256 = sha256Hex(zip);
  if (sha256 !== inputs.sha256) {
    throw releaseError(
      `${inputs.source}: the zip changed since this 'pulumi up' planned with it (sha256 ${inputs.sha256.slice(0, 12)}…, now ${sha256.slice(0, 12)}…); nothing was changed, run it again`,
    );
  }
  const release = await readScriptsRelease(zip, inputs.source);
  const done = await applyScriptsRelease(inputs.location, release, inputs.keep);
  process.stderr.write(
    `${inputs.source} (sha256 ${sha256.slice(0, 12)}…): ${done.written} files written${done.deleted.length ? `, deleted as not in the release: ${done.deleted.join(", ")}` : ""}\n`,
  );
}

/** The AWS credentials come from the stack config (configure), never from the state. */
export const scriptsReleaseProvider: dynamic.ResourceProvider<ScriptsReleaseState, ScriptsReleaseState> = {
  async configure(req) {
    configureAwsAccess(req.config);
  },

  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (!news.location || (news.location.kind !== "s3" && news.location.kind !== "folder"))
      failures.push({ property: "location", reason: "must be an s3 or folder location" });
    if (typeof news.zipPath !== "string" || news.zipPath === "")
      failures.push({ property: "zipPath", reason: "must be the path of the release's zip" });
    if (typeof news.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(news.sha256))
      failures.push({ property: "sha256", reason: "must be the zip's sha256 (64 hex digits)" });
    if (!news.files || typeof news.files !== "object" || Object.keys(news.files).length === 0)
      failures.push({ property: "files", reason: "must list the release's files" });
    if (!Array.isArray(news.keep))
      failures.push({ property: "keep", reason: "must list the files the release never deletes" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    // Another zip path with the same content (another machine, another checkout) changes nothing.
    // After a refresh: files changed or removed, or files added, in the folder.
    const drift = stableJson(olds.files) !== stableJson(news.files) || (olds.extra ?? []).length > 0;
    const changes =
      drift ||
      olds.sha256 !== news.sha256 ||
      stableJson(olds.location) !== stableJson(news.location) ||
      olds.keep.join("\n") !== news.keep.join("\n") ||
      olds.version !== news.version;
    return { changes };
  },

  async create(inputs) {
    await apply(inputs);
    const id =
      inputs.location.kind === "s3" ? `s3://${inputs.location.bucket}/${inputs.location.prefix}` : inputs.location.dir;
    return { id, outs: releaseState(inputs) };
  },

  async update(_id, _olds, news) {
    await apply(news);
    return { outs: releaseState(news) };
  },

  /**
   * `pulumi refresh`: the folder as it is, by HeadObject (each file's sha256 in its user metadata) and a listing. A file
   * of the release changed or removed by hand, or a file added, shows in `files` and `extra`, and the next `up` applies
   * the release again. (Another stack's release applied to the same folder shows the same way: keep one release per
   * environment.)
   */
  async read(id, props) {
    if (!props) return { id };
    const found = await readReleaseFolder(props.location, props.files, props.keep);
    const { extra: _extra, ...state } = props;
    const current: ScriptsReleaseState = {
      ...state,
      files: found.files,
      ...(found.extra.length ? { extra: found.extra } : {}),
    };
    return { id, props: current, inputs: current };
  },

  async delete(_id, props) {
    // The folder is shared by the platform environment's pipelines: its content stays as it is.
    process.stderr.write(
      `${props.source}: the scripts folder keeps the release's files (shared by the platform environment's pipelines)\n`,
    );
  },
};
