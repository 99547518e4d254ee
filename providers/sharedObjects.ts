/**
 * Objects every hub pipeline of the platform environment shares (procedure steps 1 and 7.2: folder markers, the
 * template, the scripts templates): written only where the key is absent (If-None-Match: *) and never deleted; one
 * this stack created is written again when the stack's KMS key changes. Serialized provider code: providers/README.md.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import * as scriptFiles from "./scriptFiles";
import type { ScriptFolderLocation } from "./scriptFiles";
import * as json from "./json";
import * as awsAccess from "./awsAccess";

const { openSharedStore } = scriptFiles;
const { pick, stableJson } = json;
const { configureAwsAccess } = awsAccess;

/** Bump when writing behaves differently. */
export const SHARED_OBJECT_PROVIDER_VERSION = 1;

export interface SharedObjectState {
  /** The bucket (prefix ""), or a folder standing in for it. */
  location: ScriptFolderLocation;
  key: string;
  content: string;
  contentType: string;
  version: number;
  /** Output: whether this stack created the object (false: it was there already, and is left as it is). */
  created?: boolean;
}

/** The object's id: `s3://<bucket>/<key>`, or the path in the folder. */
function objectId(inputs: Pick<SharedObjectState, "location" | "key">): string {
  return inputs.location.kind === "s3"
    ? `s3://${inputs.location.bucket}/${inputs.key}`
    : `${inputs.location.dir}/${inputs.key}`;
}

/** The bucket and endpoint, or the folder: a change of KMS key or region keeps the object where it is. */
function placeOf(location: ScriptFolderLocation): string {
  return location.kind === "folder" ? `folder:${location.dir}` : `s3:${location.endpoint ?? ""}:${location.bucket}`;
}

/** Creates the object when its key is absent; true when this call created it. */
export async function createSharedObject(inputs: Omit<SharedObjectState, "version" | "created">): Promise<boolean> {
  return openSharedStore(inputs.location).write(inputs.key, inputs.content, undefined, inputs.contentType);
}

function state(inputs: SharedObjectState, created: boolean): SharedObjectState {
  return { ...pick(inputs, ["location", "key", "content", "contentType", "version"]), created };
}

/** The AWS credentials come from the stack config (configure), never from the state. */
export const sharedObjectProvider: dynamic.ResourceProvider<SharedObjectState, SharedObjectState> = {
  async configure(req) {
    configureAwsAccess(req.config);
  },

  async check(_olds, news) {
    const failures: { property: string; reason: string }[] = [];
    if (!news.location || (news.location.kind !== "s3" && news.location.kind !== "folder"))
      failures.push({ property: "location", reason: "must be an s3 or folder location" });
    if (typeof news.key !== "string" || news.key === "" || news.key.startsWith("/"))
      failures.push({ property: "key", reason: "must be a key without a leading /" });
    if (typeof news.content !== "string") failures.push({ property: "content", reason: "must be text" });
    return failures.length ? { failures } : { inputs: news };
  },

  async diff(_id, olds, news) {
    // Another bucket or key is another object (this one is left, as on delete); anything else changes only the state.
    const replaces = [
      ...(placeOf(olds.location) !== placeOf(news.location) ? ["location"] : []),
      ...(olds.key !== news.key ? ["key"] : []),
    ];
    const changes =
      replaces.length > 0 ||
      stableJson(olds.location) !== stableJson(news.location) ||
      olds.content !== news.content ||
      olds.contentType !== news.contentType ||
      olds.version !== news.version;
    return { changes, replaces, deleteBeforeReplace: false };
  },

  async create(inputs) {
    const created = await createSharedObject(inputs);
    return { id: objectId(inputs), outs: state(inputs, created) };
  },

  async read(id, props) {
    if (!props) return { id };
    // Gone (deleted by hand): the next `up` creates it again.
    if (!(await openSharedStore(props.location).exists(props.key))) return { id: "" };
    return { id, props: state(props, props.created ?? false) };
  },

  async update(_id, olds, news) {
    const store = openSharedStore(news.location);
    const oldKey = olds.location.kind === "s3" ? olds.location.kmsKeyArn : undefined;
    const newKey = news.location.kind === "s3" ? news.location.kmsKeyArn : undefined;
    if (olds.created && oldKey && oldKey !== newKey) {
      // Ours, under our old key: the same bytes under the new key, unless someone changed it meanwhile (If-Match).
      const current = await store.read(news.key);
      if (current?.kmsKeyId === oldKey) await store.write(news.key, current.text, current.etag, news.contentType);
    }
    // Deleted by hand since (without a refresh): created again. Otherwise left as it is.
    const created = (await createSharedObject(news)) || (olds.created ?? false);
    return { outs: state(news, created) };
  },

  async delete() {
    // Shared with the platform environment's other pipelines: never deleted.
  },
};
