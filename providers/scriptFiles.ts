/**
 * This stack's part of the shared credentials.ini and tenant_credentials.txt (procedure step 7): created from their
 * templates when absent, then only merged into (read → merge → conditional write, retried), so two stacks writing at
 * once lose nothing and other pipelines' entries stay. Used by local mode (a folder) and the dynamic provider behind
 * components/storage/credentialFiles.ts (S3). Serialized provider code: providers/README.md.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import * as json from "./json";
import * as awsAccess from "./awsAccess";
import * as folders from "./folders";
import * as refusals from "./refusal";
import * as naming from "../core/naming";

const { pick, sha256Hex, stableJson } = json;
const { awsClientCredentials, configureAwsAccess, rememberedAwsAccess } = awsAccess;
const { makeFolder, PRIVATE_FOLDER_MODE } = folders;
const { refusal } = refusals;
const { SCRIPT_FILES } = naming;

/** Bump when writing behaves differently, so that `pulumi up` writes the entries again. */
export const SCRIPT_FILES_PROVIDER_VERSION = 2;

/** Where the folder is: an S3 bucket (a loopback endpoint in tests) or a local folder standing in for the bucket. */
export type ScriptFolderLocation =
  | { kind: "s3"; bucket: string; prefix: string; region?: string; endpoint?: string; kmsKeyArn?: string }
  | { kind: "folder"; dir: string };

/** An object as read: its text, its ETag, and the KMS key it is encrypted with (S3, SSE-KMS). */
export interface SharedObject {
  text: string;
  etag: string;
  kmsKeyId?: string;
}

/** An object store with the one guarantee a shared file needs: a write conditional on what was read. */
export interface SharedObjectStore {
  describe: string;
  read(name: string): Promise<SharedObject | undefined>;
  /** Whether the object is there, without reading it (S3 HeadObject: no kms:Decrypt). */
  exists(name: string): Promise<boolean>;
  /** Writes only if the object is still as read (`etag`), or still absent (`etag` undefined); false otherwise. */
  write(name: string, text: string, etag: string | undefined, contentType: string): Promise<boolean>;
}

export interface ScriptFilesSpec {
  location: ScriptFolderLocation;
  /** The platform's database connection name (credentials.ini warehouse_connection). */
  warehouseConnection: string;
  /** This stack's hub tenants: id → credentials string. Secret. */
  entries: Record<string, string>;
}

/** The dynamic resource's inputs and outputs. */
export interface ScriptFilesState extends ScriptFilesSpec {
  version: number;
}

/** Conflicting writers retried at most this often (each time from a fresh read). */
const ATTEMPTS = 10;

export function openSharedStore(location: ScriptFolderLocation): SharedObjectStore {
  return location.kind === "s3" ? s3Store(location) : folderStore(location.dir);
}

export type S3FolderLocation = Extract<ScriptFolderLocation, { kind: "s3" }>;

/**
 * The folder's S3 client and its key prefix (ending in `/`). Also used by providers/scriptsRelease.ts and
 * sharedObjects.ts. The client has the credentials of the stack's AWS provider, its account checked
 * (providers/awsAccess.ts), once `configure` has read them.
 */
export function s3Folder(location: S3FolderLocation): {
  client: import("@aws-sdk/client-s3").S3Client;
  prefix: string;
} {
  const { S3Client } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const client = new S3Client({
    ...(location.region ? { region: location.region } : {}),
    ...awsClientCredentials(rememberedAwsAccess(), location.region),
    ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  return { client, prefix: keyPrefix(location) };
}

/** The location's prefix ending in `/`; "" is the bucket's top, where keys are used as they are. */
function keyPrefix({ prefix }: S3FolderLocation): string {
  return prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`;
}

/** S3's answer for a key that is not there (GetObject NoSuchKey, HeadObject NotFound). */
export function isMissingKey(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === "NotFound" || e.name === "NoSuchKey" || e.$metadata?.httpStatusCode === 404;
}

/** An S3 call's error, saying what failed where: `<what>: <name>: <message>`. */
export function s3Failure(what: string, err: unknown): Error {
  const e = err as Error;
  return new Error(`${what}: ${e.name ?? "error"}: ${e.message}`, { cause: err });
}

function s3Store(location: S3FolderLocation): SharedObjectStore {
  const { GetObjectCommand, HeadObjectCommand, PutObjectCommand } =
    require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const { client, prefix } = s3Folder(location);
  const where = (name: string) => `s3://${location.bucket}/${prefix}${name}`;
  return {
    describe: `s3://${location.bucket}/${prefix}`,
    async read(name) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: location.bucket, Key: prefix + name }));
        return {
          text: await out.Body!.transformToString("utf8"),
          etag: out.ETag!,
          ...(out.SSEKMSKeyId ? { kmsKeyId: out.SSEKMSKeyId } : {}),
        };
      } catch (err) {
        if (isMissingKey(err)) return undefined;
        throw s3Failure(`cannot read ${where(name)}`, err);
      }
    },
    async exists(name) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: location.bucket, Key: prefix + name }));
        return true;
      } catch (err) {
        if (isMissingKey(err)) return false;
        throw s3Failure(`cannot look up ${where(name)}`, err);
      }
    },
    async write(name, text, etag, contentType) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: location.bucket,
            Key: prefix + name,
            Body: text,
            ContentType: contentType,
            ...(etag === undefined ? { IfNoneMatch: "*" } : { IfMatch: etag }),
            ...(location.kmsKeyArn ? { ServerSideEncryption: "aws:kms", SSEKMSKeyId: location.kmsKeyArn } : {}),
          }),
        );
        return true;
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        // 412: changed since read (or created meanwhile); 409: a concurrent conditional write; 404: deleted since read.
        if ([412, 409, 404].includes(e.$metadata?.httpStatusCode ?? 0) || e.name === "PreconditionFailed") return false;
        throw s3Failure(`cannot write ${where(name)}`, err);
      }
    },
  };
}

/** A folder (the embedded default's bucket): the ETag is the content's sha256; writes hold a lock file. */
function folderStore(dir: string): SharedObjectStore {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const readText = (file: string) => {
    try {
      return fs.readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  };
  return {
    describe: dir,
    async read(name) {
      const text = readText(path.join(dir, name));
      return text === undefined ? undefined : { text, etag: sha256Hex(text) };
    },
    async exists(name) {
      return fs.existsSync(path.join(dir, name));
    },
    async write(name, text, etag) {
      const file = path.join(dir, name);
      // A folder marker (a key ending in /) is the folder itself.
      if (name === "" || name.endsWith("/")) {
        if (etag !== undefined || fs.existsSync(file)) return false;
        makeFolder(file, PRIVATE_FOLDER_MODE);
        return true;
      }
      makeFolder(path.dirname(file), PRIVATE_FOLDER_MODE);
      const lock = `${file}.lock`;
      let fd: number;
      try {
        fd = fs.openSync(lock, "wx", 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw err;
      }
      try {
        const current = readText(file);
        if ((current === undefined ? undefined : sha256Hex(current)) !== etag) return false;
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, text, { mode: 0o600 });
        fs.renameSync(tmp, file);
        return true;
      } finally {
        fs.closeSync(fd);
        fs.rmSync(lock, { force: true });
      }
    },
  };
}

/**
 * Read → merge → conditional write, again from a fresh read while another writer comes first. `merge` returns the new
 * text, or undefined to leave the file as it is. A file the merge leaves as it is is written again all the same when
 * it is encrypted with `reencryptFrom` (this stack's previous KMS key): the write uses the store's current key.
 */
export async function updateSharedFile(
  store: SharedObjectStore,
  name: string,
  contentType: string,
  merge: (current: string | undefined) => Promise<string | undefined>,
  reencryptFrom?: string,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const current = await store.read(name);
    const next = await merge(current?.text);
    const reencrypt = reencryptFrom !== undefined && current?.kmsKeyId === reencryptFrom;
    if (next === undefined || (current && next === current.text && !reencrypt)) return;
    if (await store.write(name, next, current?.etag, contentType)) return;
    if (attempt >= ATTEMPTS)
      throw refusal(
        `${store.describe}${name}: another writer changed it ${ATTEMPTS} times while this one tried; nothing of this stack was written, run again`,
      );
    // Jitter, so that two writers do not meet again at once.
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 80 * attempt)));
  }
}

/** A placeholder of the shipped templates: `<hub tenant id>`, `<DATABASE_CONNECTION_NAME>`. */
const PLACEHOLDER = /^<[^<>]*>$/;

/**
 * tenant_credentials.txt with `own` (hub tenant id → credentials string) set and `released` ids removed (owned before,
 * not now); the template's placeholder entry dropped; every other entry left as it is, where it is.
 */
export function mergeTenantCredentials(
  text: string,
  own: Record<string, string>,
  released: readonly string[] = [],
): string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw refusal(
      `${SCRIPT_FILES.tenantCredentials} in the shared scripts folder is not valid JSON (another tool wrote it?): fix it by hand (nothing was written)`,
    );
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw refusal(
      `${SCRIPT_FILES.tenantCredentials} in the shared scripts folder is not a JSON object of hub tenant id → credentials string: fix it by hand (nothing was written)`,
    );
  }
  const ownByLower = new Map(Object.keys(own).map((id) => [id.toLowerCase(), id]));
  const drop = new Set(released.map((id) => id.toLowerCase()).filter((id) => !ownByLower.has(id)));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const mine = ownByLower.get(key.toLowerCase());
    if (PLACEHOLDER.test(key) || drop.has(key.toLowerCase())) continue;
    if (mine) out[mine] = own[mine];
    else out[key] = value;
  }
  for (const [id, value] of Object.entries(own)) if (!(id in out)) out[id] = value;
  return JSON.stringify(out, null, 2) + "\n";
}

/** The [warehouse] warehouse_connection line of credentials.ini: its index, key as written, and value. */
function warehouseConnectionLine(
  lines: string[],
): { index: number; key: string; value: string } | { index: -1; warehouseAt: number } {
  let section = "";
  let warehouseAt = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1].trim().toLowerCase();
      if (section === "warehouse" && warehouseAt < 0) warehouseAt = i;
      continue;
    }
    const m = /^([^=:;#]+)[=:](.*)$/.exec(line);
    if (m && section === "warehouse" && m[1].trim().toLowerCase() === "warehouse_connection")
      return { index: i, key: m[1].trim(), value: m[2].trim() };
  }
  return { index: -1, warehouseAt };
}

/**
 * credentials.ini with [warehouse] warehouse_connection = `connection`. Other sections, keys and comments stay. A
 * value other than a placeholder, ours or `previous` (this stack's value before a rename of its database connection)
 * is another pipeline's setting: refused, never overwritten.
 */
export function mergeCredentialsIni(text: string, connection: string, previous?: string): string {
  const lines = text.split(/\r?\n/);
  const done = (t: string) => (t.endsWith("\n") ? t : t + "\n");
  const found = warehouseConnectionLine(lines);
  if ("value" in found) {
    if (found.value === connection) return done(text);
    if (found.value !== "" && !PLACEHOLDER.test(found.value) && found.value !== previous) {
      throw refusal(
        `${SCRIPT_FILES.credentialsIni} in the shared scripts folder sets warehouse_connection = ${found.value}, but this stack's database connection is ${connection}: ` +
          "the hub pipelines of a platform environment share one; correct hubExport:database.connectionName or the file (nothing was written)",
      );
    }
    lines[found.index] = `${found.key} = ${connection}`;
    return done(lines.join("\n"));
  }
  if (found.warehouseAt >= 0) lines.splice(found.warehouseAt + 1, 0, `warehouse_connection = ${connection}`);
  else lines.push(...(lines.at(-1) === "" ? [] : [""]), "[warehouse]", `warehouse_connection = ${connection}`);
  return done(lines.join("\n"));
}

/** The file's template from the folder (step 7.2), for a file that is absent. */
async function fromTemplate(store: SharedObjectStore, template: string, current: string | undefined): Promise<string> {
  if (current !== undefined) return current;
  const copy = await store.read(template);
  if (!copy)
    throw refusal(
      `${store.describe}${template} is missing: the scripts folder's templates must be there to create the file from (procedure step 7.2): put it back (a scripts release brings it; 'pulumi up' writes a missing one after 'pulumi refresh'), then run again`,
    );
  return copy.text;
}

/** What this stack had in the files before a change: its connection name, and its KMS key when that changed. */
export interface PreviousScriptFiles {
  warehouseConnection?: string;
  /** The files this stack encrypted with it are written again with the location's key. */
  kmsKeyArn?: string;
}

/** Steps 7.2 to 7.4 for one stack: both files created when absent, its connection name and its entries set. */
export async function applyScriptFiles(
  spec: ScriptFilesSpec,
  released: readonly string[] = [],
  previous: PreviousScriptFiles = {},
): Promise<void> {
  const store = openSharedStore(spec.location);
  const { credentialsIni, credentialsIniTemplate, tenantCredentials, tenantCredentialsTemplate } = SCRIPT_FILES;
  for (const [name, template, contentType, merge] of [
    [
      credentialsIni,
      credentialsIniTemplate,
      "text/plain",
      (text: string) => mergeCredentialsIni(text, spec.warehouseConnection, previous.warehouseConnection),
    ],
    [
      tenantCredentials,
      tenantCredentialsTemplate,
      "application/json",
      (text: string) => mergeTenantCredentials(text, spec.entries, released),
    ],
  ] as const) {
    const fill = async (current: string | undefined) => merge(await fromTemplate(store, template, current));
    await updateSharedFile(store, name, contentType, fill, previous.kmsKeyArn);
  }
}

/** Removing a stack: its entries leave tenant_credentials.txt; credentials.ini, shared, stays. */
export async function releaseScriptFiles(location: ScriptFolderLocation, ids: readonly string[]): Promise<void> {
  const store = openSharedStore(location);
  // Nothing to release from a file that is gone.
  await updateSharedFile(store, SCRIPT_FILES.tenantCredentials, "application/json", async (current) =>
    current === undefined ? undefined : mergeTenantCredentials(current, {}, ids),
  );
}

/**
 * What of `spec` the files hold now (`pulumi refresh`): its entries that are there with its values, and its connection
 * name when credentials.ini has it (else ""). Nothing else is read out: other entries are not this stack's.
 */
export async function readScriptFiles(
  spec: ScriptFilesSpec,
): Promise<Pick<ScriptFilesSpec, "warehouseConnection" | "entries">> {
  const store = openSharedStore(spec.location);
  const [ini, txt] = await Promise.all([
    store.read(SCRIPT_FILES.credentialsIni),
    store.read(SCRIPT_FILES.tenantCredentials),
  ]);
  const line = ini ? warehouseConnectionLine(ini.text.split(/\r?\n/)) : undefined;
  const connection = line && "value" in line ? line.value : undefined;
  let doc: Record<string, unknown> = {};
  try {
    const parsed: unknown = txt ? JSON.parse(txt.text) : {};
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) doc = parsed as Record<string, unknown>;
  } catch {
    // Not JSON any more: none of this stack's entries is usable; the next `up` says what to fix.
  }
  const inFile = new Map(Object.entries(doc).map(([id, value]) => [id.toLowerCase(), value]));
  const entries = Object.fromEntries(
    Object.entries(spec.entries ?? {}).filter(([id, value]) => inFile.get(id.toLowerCase()) === value),
  );
  return { warehouseConnection: connection === spec.warehouseConnection ? connection : "", entries };
}

/** The file a location names: a change of KMS key or region keeps it, another bucket, prefix or folder does not. */
function fileOf(location: ScriptFolderLocation): string {
  if (location.kind === "folder") return `folder:${location.dir}`;
  return `s3:${location.endpoint ?? ""}:${location.bucket}/${keyPrefix(location)}`;
}

function state(inputs: ScriptFilesState): ScriptFilesState {
  return pick(inputs, ["location", "warehouseConnection", "entries", "version"]);
}

/** The AWS credentials come from the stack config (configure), never from the state. */
export const scriptFilesProvider: dynamic.ResourceProvider<ScriptFilesState, ScriptFilesState> = {
  async configure(req) {
    configureAwsAccess(req.config);
  },

  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (!news.location || (news.location.kind !== "s3" && news.location.kind !== "folder"))
      failures.push({ property: "location", reason: "must be an s3 or folder location" });
    if (typeof news.warehouseConnection !== "string" || news.warehouseConnection === "")
      failures.push({ property: "warehouseConnection", reason: "is required" });
    if (
      !news.entries ||
      typeof news.entries !== "object" ||
      Object.values(news.entries).some((v) => typeof v !== "string")
    )
      failures.push({ property: "entries", reason: "must map hub tenant ids to credentials strings" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    // Another file: its entries are released from the old one first, then written to the new one (the engine deletes
    // with the old state's location). The same file under a new KMS key or region: an update, which never removes
    // them (replaced create-first, the old resource's delete would take them out of the file just written).
    const replaces = fileOf(olds.location) === fileOf(news.location) ? [] : ["location"];
    const changes =
      replaces.length > 0 ||
      stableJson(olds.location) !== stableJson(news.location) ||
      olds.warehouseConnection !== news.warehouseConnection ||
      stableJson(olds.entries) !== stableJson(news.entries) ||
      olds.version !== news.version;
    return { changes, replaces, deleteBeforeReplace: replaces.length > 0 };
  },

  async create(inputs) {
    await applyScriptFiles(inputs);
    const id =
      inputs.location.kind === "s3" ? `s3://${inputs.location.bucket}/${inputs.location.prefix}` : inputs.location.dir;
    return { id, outs: state(inputs) };
  },

  async read(id, props) {
    if (!props) return { id };
    // Only values already in the state come back (a subset of its secret entries): nothing of other pipelines.
    return { id, props: { ...state(props), ...(await readScriptFiles(props)) } };
  },

  async update(_id, olds, news) {
    const oldKey = olds.location.kind === "s3" ? olds.location.kmsKeyArn : undefined;
    const newKey = news.location.kind === "s3" ? news.location.kmsKeyArn : undefined;
    // Every old entry is released: mergeTenantCredentials keeps the ones still owned.
    await applyScriptFiles(news, Object.keys(olds.entries ?? {}), {
      warehouseConnection: olds.warehouseConnection || undefined,
      ...(oldKey && oldKey !== newKey ? { kmsKeyArn: oldKey } : {}),
    });
    return { outs: state(news) };
  },

  async delete(_id, props) {
    await releaseScriptFiles(props.location, Object.keys(props.entries ?? {}));
  },
};
