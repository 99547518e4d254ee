/**
 * What a `pulumi destroy` or a rename (a client rename) keeps and why, and what it removes that people notice: the
 * stack output `onRemoval`, from the same choices the components make. Each kept item names the resource types it
 * covers; test/components/onRemoval.test.ts holds every retained or protected resource of a plan to an item.
 */
import type { StackConfig } from "../config/schema";
import { BUCKET_FOLDERS, clientTables, SCRIPT_FILES } from "../core/naming";
import type { RetentionOptions } from "./storage/platformBucket";

/** Resources whose provider never deletes what they stand for (providers/sharedObjects.ts): kept without retainOnDelete. */
export const SHARED_OBJECT_TYPE = "pulumi-nodejs:dynamic/hubExport:SharedObject";
export const KEPT_BY_PROVIDER_TYPES: readonly string[] = [SHARED_OBJECT_TYPE];

export interface KeptItem {
  what: string;
  why: string;
  /** The resource types it covers (none: kept outside the stack's state). */
  types: string[];
}

export function onRemoval(config: StackConfig, retention: RetentionOptions, logGroupName: string) {
  const kept: KeptItem[] = [];
  const removed: string[] = [];
  const protectedNote = retention.protect ? "; protected: a destroy stops on it until `pulumi state unprotect`" : "";

  // A created bucket that a destroy may delete (qa: forceDestroy) takes every object with it, shared ones included.
  const bucketGoes = config.bucket.create && retention.destroyable;
  const withBucket = (why: string) =>
    bucketGoes ? `${why}; a rename keeps them, a destroy deletes them with the bucket` : why;
  kept.push({
    what: "the bucket's shared objects: folder markers, the build's template, the scripts templates",
    why: withBucket(
      "the platform environment's other pipelines use them: they are created only where absent and never deleted",
    ),
    types: [SHARED_OBJECT_TYPE],
  });
  kept.push({
    what: `${BUCKET_FOLDERS.scripts}${SCRIPT_FILES.credentialsIni} with its warehouse_connection, and ${SCRIPT_FILES.tenantCredentials} with the other pipelines' entries`,
    why: withBucket("the platform environment's pipelines share them: only this stack's hub tenants' entries leave"),
    types: [],
  });
  if (!config.bucket.create) {
    kept.push({
      what: "every object this stack wrote to the adopted bucket",
      why: "the bucket is the platform environment's, not this stack's",
      types: ["aws:s3/bucketObjectv2:BucketObjectv2"],
    });
  }
  const client = clientTables(config.clientName);
  kept.push({
    what: `the staging schema, the common tables, this client's run tables (${[client.messages, client.archive, client.status, client.rowsHeldBack].join(", ")}) and its function ${client.oldestXact}()`,
    why: `they hold the messages and the run history, and the common tables are shared by the environment's clients (the publish schema is the platform's: never the stack's)${protectedNote}`,
    types: ["pulumi-nodejs:dynamic/hubExport:SqlBaseline", "pulumi-nodejs:dynamic/hubExport:ClientRunTables"],
  });
  if (config.scriptsRelease) {
    kept.push({
      what: `the scripts release in ${BUCKET_FOLDERS.scripts}`,
      why: withBucket("the folder is the platform environment's"),
      types: ["pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles"],
    });
  }
  kept.push({
    what: "the hub tenants' routing rules",
    why: "the hub's cfg API has no delete: ask the hub team to remove the rows from cfg_routing_rule",
    types: [],
  });
  if (retention.protect && config.bucket.create) {
    const logs = config.bucket.accessLogs.bucket ? "" : " and the log bucket of its server access logs";
    kept.push({
      what: `the created bucket${logs}`,
      why: "prod's data and its access record; protected",
      types: ["aws:s3/bucket:Bucket"],
    });
  }
  if (retention.protect && !config.bucket.kmsKeyArn)
    kept.push({
      what: "the stack's KMS key",
      why: "it decrypts every object, record and log it encrypted; protected",
      types: ["aws:kms/key:Key"],
    });
  if (retention.protect) {
    kept.push({
      what: `the log group ${logGroupName} with the runs' logs`,
      why: `the record of what prod exported; its logs expire after ${config.task.logRetentionDays} days (hubExport:task.logRetentionDays), and a renamed stack writes to a new one`,
      types: ["aws:cloudwatch/logGroup:LogGroup"],
    });
  } else {
    removed.push(`the log group ${logGroupName}, with its logs`);
  }

  if (config.image.promoted) {
    removed.push(
      `nothing of the image: this stack runs ${config.image.promoted} from the build stack's repository, which keeps it`,
    );
  } else if (config.image.pullAccounts.length > 0) {
    kept.push({
      what: "the image repository with every tagged image",
      why: `stacks of account ${config.image.pullAccounts.join(", ")} run images from it by digest; delete it by hand once none does. A stack re-created under this name adopts it: set hubExport:image.adoptRepository: true for its first up`,
      types: ["aws:ecr/repository:Repository", "aws:ecr/repositoryPolicy:RepositoryPolicy", "docker-build:index:Image"],
    });
  } else {
    removed.push("the image repository with its images");
  }
  if (bucketGoes)
    removed.push(
      `on a destroy, the bucket ${config.bucket.name} with every object and every version in it (forceDestroy), the shared ones and the credential files included`,
    );
  if (bucketGoes && !config.bucket.accessLogs.bucket)
    removed.push(
      `on a destroy, the log bucket of ${config.bucket.name}'s server access logs, with the logs (forceDestroy)`,
    );
  removed.push(
    `this stack's hub tenants' entries (their credentials strings) in ${BUCKET_FOLDERS.scripts}${SCRIPT_FILES.tenantCredentials}`,
    "the alerts topic with its subscriptions: after a rename, every email address gets AWS's confirmation mail again and must confirm it, and each https endpoint must confirm again",
    "the connection records, at once (no recovery window: they are derived from the config)",
  );
  return { kept, removed };
}
