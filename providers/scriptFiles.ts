/**
 * The shared scripts folder /Tools/hub_python_scripts (procedure step 7): every hub pipeline of the platform
 * environment uses the same credentials.ini and tenant_credentials.txt. A stack never writes them whole:
 * - absent, each is created as a copy of its template in the folder (step 7.2: credentials_template.ini,
 *   tenant_credentials_template.txt), the template's placeholders then replaced;
 * - credentials.ini gets [warehouse] warehouse_connection (step 7.3), refused when another pipeline set another value;
 * - tenant_credentials.txt gets this stack's hub tenants' entries added, updated and removed (step 7.4); other
 *   entries and keys we do not know stay as they are.
 * Each change is read → merge → conditional write (S3 If-Match / If-None-Match on the ETag read; a lock file on a
 * folder), retried from a fresh read when another writer came first: two stacks writing at once lose nothing.
 *
 * Used by local mode (a folder for the bucket) and by the dynamic provider behind components/storage/credentialFiles.ts
 * (S3). Serialized provider code cannot load project modules: everything is in this file, SDKs required inside.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { stableJson as jsonStable } from "./json";

// A local alias: the serializer captures the function value, not the ./json module object.
const stableJson = jsonStable;

/** Bump when writing behaves differently, so that `pulumi up` writes the entries again. */
export const SCRIPT_FILES_PROVIDER_VERSION = 1;

export const SHARED_FILES = {
  credentialsIni: "credentials.ini",
  tenantCredentials: "tenant_credentials.txt",
  credentialsIniTemplate: "credentials_template.ini",
  tenantCredentialsTemplate: "tenant_credentials_template.txt",
} as const;

/** Where the folder is: an S3 bucket (a loopback endpoint in tests) or a local folder standing in for the bucket. */
export type ScriptFolderLocation =
  | { kind: "s3"; bucket: string; prefix: string; region?: string; endpoint?: string; kmsKeyArn?: string }
  | { kind: "folder"; dir: string };

/** An object store with the one guarantee a shared file needs: a write conditional on what was read. */
export interface SharedObjectStore {
  describe: string;
  read(name: string): Promise<{ text: string; etag: string } | undefined>;
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

/** The folder's S3 client and its key prefix (ending in `/`). Also used by providers/scriptsRelease.ts. */
export function s3Folder(location: S3FolderLocation): { client: import("@aws-sdk/client-s3").S3Client; prefix: string } {
  const { S3Client } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const client = new S3Client({
    ...(location.region ? { region: location.region } : {}),
    ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  return { client, prefix: location.prefix.endsWith("/") ? location.prefix : `${location.prefix}/` };
}

function s3Store(location: S3FolderLocation): SharedObjectStore {
  const { GetObjectCommand, PutObjectCommand } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const { client, prefix } = s3Folder(location);
  const where = (name: string) => `s3://${location.bucket}/${prefix}${name}`;
  return {
    describe: `s3://${location.bucket}/${prefix}`,
    async read(name) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: location.bucket, Key: prefix + name }));
        return { text: await out.Body!.transformToString("utf8"), etag: out.ETag! };
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === "NoSuchKey" || e.$metadata?.httpStatusCode === 404) return undefined;
        throw new Error(`cannot read ${where(name)}: ${e.name ?? "error"}: ${(err as Error).message}`);
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
        throw new Error(`cannot write ${where(name)}: ${e.name ?? "error"}: ${(err as Error).message}`);
      }
    },
  };
}

/** A folder (the embedded default's bucket): the ETag is the content's sha256; writes hold a lock file. */
function folderStore(dir: string): SharedObjectStore {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const crypto = require("node:crypto") as typeof import("node:crypto");
  const etagOf = (text: string) => crypto.createHash("sha256").update(text, "utf8").digest("hex");
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
      return text === undefined ? undefined : { text, etag: etagOf(text) };
    },
    async write(name, text, etag) {
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, name);
      const lock = `${file}.lock`;
      let fd: number;
      try {
        fd = fs.openSync(lock, "wx");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw err;
      }
      try {
        const current = readText(file);
        if ((current === undefined ? undefined : etagOf(current)) !== etag) return false;
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

/** Read → merge → conditional write, again from a fresh read while another writer comes first. */
/** `merge` returns the new text, or undefined to leave the file as it is. */
export async function updateSharedFile(store: SharedObjectStore, name: string, contentType: string, merge: (current: string | undefined) => Promise<string | undefined>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const current = await store.read(name);
    const next = await merge(current?.text);
    if (next === undefined || (current && next === current.text)) return;
    if (await store.write(name, next, current?.etag, contentType)) return;
    if (attempt >= ATTEMPTS) throw new Error(`${store.describe}${name}: another writer changed it ${ATTEMPTS} times while this one tried; nothing of this stack was written, run again`);
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
export function mergeTenantCredentials(text: string, own: Record<string, string>, released: readonly string[] = []): string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${SHARED_FILES.tenantCredentials} in the shared scripts folder is not valid JSON: fix it by hand (nothing was written)`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`${SHARED_FILES.tenantCredentials} in the shared scripts folder is not a JSON object of hub tenant id → credentials string: fix it by hand (nothing was written)`);
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

/**
 * credentials.ini with [warehouse] warehouse_connection = `connection`. Other sections, keys and comments stay. A
 * value other than a placeholder or ours is another pipeline's setting: refused, never overwritten.
 */
export function mergeCredentialsIni(text: string, connection: string): string {
  const lines = text.split(/\r?\n/);
  let section = "";
  let warehouseAt = -1;
  const done = (t: string) => (t.endsWith("\n") ? t : t + "\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1].trim().toLowerCase();
      if (section === "warehouse" && warehouseAt < 0) warehouseAt = i;
      continue;
    }
    const m = /^([^=:;#]+)[=:](.*)$/.exec(line);
    if (!m || section !== "warehouse" || m[1].trim().toLowerCase() !== "warehouse_connection") continue;
    const value = m[2].trim();
    if (value === connection) return done(text);
    if (value !== "" && !PLACEHOLDER.test(value)) {
      throw new Error(
        `${SHARED_FILES.credentialsIni} in the shared scripts folder sets warehouse_connection = ${value}, but this stack's database connection is ${connection}: ` +
          "the hub pipelines of a platform environment share one; correct hubExport:database.connectionName or the file (nothing was written)",
      );
    }
    lines[i] = `${m[1].trim()} = ${connection}`;
    return done(lines.join("\n"));
  }
  if (warehouseAt >= 0) lines.splice(warehouseAt + 1, 0, `warehouse_connection = ${connection}`);
  else lines.push(...(lines.at(-1) === "" ? [] : [""]), "[warehouse]", `warehouse_connection = ${connection}`);
  return done(lines.join("\n"));
}

/** The file's template from the folder (step 7.2), for a file that is absent. */
async function fromTemplate(store: SharedObjectStore, template: string, current: string | undefined): Promise<string> {
  if (current !== undefined) return current;
  const copy = await store.read(template);
  if (!copy) throw new Error(`${store.describe}${template} is missing: the scripts folder's templates must be there to create the file from (procedure step 7.2)`);
  return copy.text;
}

/** Steps 7.2 to 7.4 for one stack: both files created when absent, its connection name and its entries set. */
export async function applyScriptFiles(spec: ScriptFilesSpec, released: readonly string[] = []): Promise<void> {
  const store = openSharedStore(spec.location);
  await updateSharedFile(store, SHARED_FILES.credentialsIni, "text/plain", async (current) =>
    mergeCredentialsIni(await fromTemplate(store, SHARED_FILES.credentialsIniTemplate, current), spec.warehouseConnection),
  );
  await updateSharedFile(store, SHARED_FILES.tenantCredentials, "application/json", async (current) =>
    mergeTenantCredentials(await fromTemplate(store, SHARED_FILES.tenantCredentialsTemplate, current), spec.entries, released),
  );
}

/** Removing a stack: its entries leave tenant_credentials.txt; credentials.ini, shared, stays. */
export async function releaseScriptFiles(location: ScriptFolderLocation, ids: readonly string[]): Promise<void> {
  const store = openSharedStore(location);
  // Nothing to release from a file that is gone.
  await updateSharedFile(store, SHARED_FILES.tenantCredentials, "application/json", async (current) => (current === undefined ? undefined : mergeTenantCredentials(current, {}, ids)));
}

function state(inputs: ScriptFilesState): ScriptFilesState {
  return { location: inputs.location, warehouseConnection: inputs.warehouseConnection, entries: inputs.entries, version: inputs.version };
}

export const scriptFilesProvider: dynamic.ResourceProvider<ScriptFilesState, ScriptFilesState> = {
  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (!news.location || (news.location.kind !== "s3" && news.location.kind !== "folder")) failures.push({ property: "location", reason: "must be an s3 or folder location" });
    if (typeof news.warehouseConnection !== "string" || news.warehouseConnection === "") failures.push({ property: "warehouseConnection", reason: "is required" });
    if (!news.entries || typeof news.entries !== "object" || Object.values(news.entries).some((v) => typeof v !== "string")) failures.push({ property: "entries", reason: "must map hub tenant ids to credentials strings" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    const replaces = stableJson(olds.location) !== stableJson(news.location) ? ["location"] : [];
    const changes = replaces.length > 0 || olds.warehouseConnection !== news.warehouseConnection || stableJson(olds.entries) !== stableJson(news.entries) || olds.version !== news.version;
    // Another folder: write the new one first, then release the old one's entries.
    return { changes, replaces, deleteBeforeReplace: false };
  },

  async create(inputs) {
    await applyScriptFiles(inputs);
    const id = inputs.location.kind === "s3" ? `s3://${inputs.location.bucket}/${inputs.location.prefix}` : inputs.location.dir;
    return { id, outs: state(inputs) };
  },

  async update(_id, olds, news) {
    const released = Object.keys(olds.entries ?? {}).filter((id) => !Object.keys(news.entries).some((n) => n.toLowerCase() === id.toLowerCase()));
    await applyScriptFiles(news, released);
    return { outs: state(news) };
  },

  async delete(_id, props) {
    await releaseScriptFiles(props.location, Object.keys(props.entries ?? {}));
  },
};
