/**
 * `pulumi up` and `pulumi destroy` of a planned program (components/planner: the real program under the SDK's mocks)
 * against the services this machine runs: the loopback S3 (test/support/s3.ts, reached through AWS_ENDPOINT_URL_S3),
 * embedded PostgreSQL and the hub emulator. The custom resources' providers are called for real, through the engine's
 * steps (test/support/engine.ts: updates, replacements create-first unless deleteBeforeReplace, deletes with the OLD
 * state); each BucketObjectv2 is put as the AWS provider puts it (content, content type, SSE-KMS, tags) and deleted
 * unless retained. What needs AWS itself (IAM, ECS, KMS, Secrets Manager, the PostgreSQL provider's roles and
 * grants) is left out: tests write the connection records themselves and run the task as the admin login.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { S3Client, PutObjectCommand, DeleteObjectCommand } from "@aws-sdk/client-s3";
import type { PlanRun } from "../../components/planner";
import { s3ObjectInspector } from "../../components/storage/objectGuard";
import { revealValue } from "../../components/planner/values";
import { configRowProvider } from "../../providers/sqlRows";
import { baselineProvider } from "../../providers/baseline";
import { scriptFilesProvider } from "../../providers/scriptFiles";
import { sharedObjectProvider } from "../../providers/sharedObjects";
import { routingRulesProvider } from "../../providers/routingRules";
import { scriptsReleaseProvider } from "../../providers/scriptsRelease";
import { createResource, deleteResource, updateResource, type Step } from "./engine";
import { emulatorConfig, engineConfigOf } from "../../bench/platform";
import { createTestDatabase } from "./database";
import { standInForDba } from "../../local/warehouseDba";
import { PLATFORM_ROLES } from "../../bench/platformRoles";
import { loopbackAwsEnv, startLoopbackS3 } from "./loopbackAws";
import { taskBundle } from "./taskProcess";
import { inputs as revealedInputs, one, planOf } from "../fixtures/plan";
import { configureSqlProviders, databaseConfigOf, pgConnectionOf } from "../fixtures/warehouse";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Pool } from "pg";
import { startEmulator, type Emulator, type EmulatorConfigInput } from "../../emulator";
import type { S3Emulator } from "./s3";
import { validateStackConfig } from "../../config/validate";
import { installationOf } from "../../core/installation";
import { loadPipelineTemplate, loadSqlSources } from "../../templates";
import { writeConnectionRecords } from "../../local/stores";

const OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2";
const DYNAMIC = "pulumi-nodejs:dynamic/hubExport:";

/** The dynamic providers by type, in the order an `up` needs them (tables before rows, templates before the files). */
const PROVIDERS: [string, dynamic.ResourceProvider][] = [
  ["SharedObject", sharedObjectProvider],
  ["ScriptsReleaseFiles", scriptsReleaseProvider],
  ["SqlBaseline", baselineProvider],
  ["ClientRunTables", baselineProvider],
  ["ConfigRow", configRowProvider],
  ["ScriptFileEntries", scriptFilesProvider],
  ["RoutingRuleSet", routingRulesProvider],
];

/** One resource in the state: its inputs' outputs, and the options the engine keeps. */
export interface DeployedResource {
  type: string;
  name: string;
  id: string;
  state: Record<string, any>;
  retainOnDelete: boolean;
}

/** The stack's state: resource key (`type name`) → resource. */
export type StackState = Map<string, DeployedResource>;

/** What an `up` did to each resource, `type name` → step. */
export type UpReport = Record<string, Step | "delete">;

const keyOf = (r: { type: string; name: string }) => `${r.type} ${r.name}`;
const kindOf = (type: string) =>
  type === OBJECT ? OBJECT : type.startsWith(DYNAMIC) ? type.slice(DYNAMIC.length) : undefined;
/** The order of an `up` (a delete goes the other way): shared objects, the stack's objects, then the providers'. */
const ORDER = ["SharedObject", OBJECT, ...PROVIDERS.map(([kind]) => kind).filter((kind) => kind !== "SharedObject")];
const order = (type: string) => ORDER.indexOf(kindOf(type)!);

function providerOf(type: string): dynamic.ResourceProvider {
  const found = PROVIDERS.find(([kind]) => kind === kindOf(type));
  if (!found) throw new Error(`no provider for ${type}`);
  return found[1];
}

/** A resource's inputs as its provider gets them: secrets revealed, the serialized provider left out. */
function providerInputs(inputs: Record<string, unknown>): Record<string, any> {
  const { __provider: _provider, ...rest } = revealValue(inputs) as Record<string, any>;
  return rest;
}

/** The AWS provider's BucketObjectv2, against S3: put on create and update; delete unless retained. */
const bucketObjects = {
  client: () => new S3Client({ region: "us-east-1" }),
  async put(inputs: Record<string, any>): Promise<void> {
    const client = bucketObjects.client();
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: inputs.bucket,
          Key: inputs.key,
          Body:
            inputs.contentBase64 !== undefined
              ? Buffer.from(inputs.contentBase64, "base64")
              : Buffer.from(inputs.content ?? "", "utf8"),
          ContentType: inputs.contentType,
          ServerSideEncryption: inputs.serverSideEncryption,
          SSEKMSKeyId: inputs.kmsKeyId,
          ...(inputs.tags ? { Tagging: new URLSearchParams(inputs.tags).toString() } : {}),
        }),
      );
    } finally {
      client.destroy();
    }
  },
  async delete(state: Record<string, any>): Promise<void> {
    const client = bucketObjects.client();
    try {
      await client.send(new DeleteObjectCommand({ Bucket: state.bucket, Key: state.key }));
    } finally {
      client.destroy();
    }
  },
};

/** `pulumi up` of `plan` over `state` (empty for a first up); returns the new state and what happened. */
export async function up(
  installation: PlanRun,
  state: StackState = new Map(),
): Promise<{ state: StackState; report: UpReport }> {
  const next: StackState = new Map();
  const report: UpReport = {};
  const planned = installation.resources
    .filter((r) => !r.read && kindOf(r.type) !== undefined)
    .sort((a, b) => order(a.type) - order(b.type));
  for (const resource of planned) {
    const key = keyOf(resource);
    const inputs = providerInputs(resource.inputs);
    const retainOnDelete = resource.options.retainOnDelete ?? false;
    const old = state.get(key);
    if (resource.type === OBJECT) {
      const replaced = old && (old.state.bucket !== inputs.bucket || old.state.key !== inputs.key);
      if (!old || replaced || JSON.stringify(old.state) !== JSON.stringify(inputs)) await bucketObjects.put(inputs);
      if (replaced && !old.retainOnDelete) await bucketObjects.delete(old.state);
      report[key] = !old
        ? "create"
        : replaced
          ? "replace (create first)"
          : JSON.stringify(old.state) === JSON.stringify(inputs)
            ? "same"
            : "update";
      next.set(key, {
        type: resource.type,
        name: resource.name,
        id: `${inputs.bucket}/${inputs.key}`,
        state: inputs,
        retainOnDelete,
      });
      continue;
    }
    const provider = providerOf(resource.type);
    const steps: Step[] = [];
    const deployed = old
      ? await updateResource(provider, { id: old.id, state: old.state }, inputs, steps)
      : await createResource(provider, inputs);
    report[key] = old ? steps[0] : "create";
    next.set(key, {
      type: resource.type,
      name: resource.name,
      id: deployed.id,
      state: deployed.state as Record<string, any>,
      retainOnDelete,
    });
  }
  // Resources no longer in the program: deleted with their old state, in reverse order, unless retained.
  const gone = [...state.values()].filter((r) => !next.has(keyOf(r))).sort((a, b) => order(b.type) - order(a.type));
  for (const old of gone) {
    report[keyOf(old)] = "delete";
    if (old.retainOnDelete) continue;
    if (old.type === OBJECT) await bucketObjects.delete(old.state);
    else await deleteResource(providerOf(old.type), { id: old.id, state: old.state });
  }
  return { state: next, report };
}

/** `pulumi destroy`: every resource deleted with its state, unless retained. */
export async function destroy(state: StackState): Promise<void> {
  await up(
    { project: "", stack: "", account: { accountId: "", region: "", partition: "" }, resources: [], outputs: {} },
    state,
  );
}

/**
 * The real program under mocks for a raw stack config (bench/platform.ts rawStackConfigFor), as `pulumi up`
 * would run it for `stack`; the adopted bucket's guard looks at S3 for real (the loopback one, through
 * AWS_ENDPOINT_URL_S3).
 */
export function planStack(config: Record<string, unknown>, stack: string): Promise<PlanRun> {
  return planOf(engineConfigOf(config), stack, { objectInspector: s3ObjectInspector(), deployable: true });
}

/** The task's command line as the plan's task definition holds it (`run --definition ... --cls ...`). */
export function taskCommand(installation: PlanRun): string[] {
  const [container] = JSON.parse(
    revealedInputs(one(installation, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions,
  );
  return container.command;
}

/** What a platform environment runs, for the stacks of a test to be deployed into. */
export interface PlatformServices {
  /** `url` is the superuser's (the DBA's and the HR loader's); `adminUrl` the admin login's, which provisions. */
  db: { url: string; adminUrl: string; drop(): Promise<void> };
  /** As the superuser: seed the publish schema with `loaderRole: SAMPLE_LOADER_ROLE`. */
  pool: Pool;
  hub: Emulator;
  /** The bucket's S3; this process's AWS SDK clients reach it (AWS_ENDPOINT_URL_S3). */
  s3: S3Emulator;
  /** The AWS environment of the task's process. */
  env: Record<string, string>;
  /** The folder standing in for Secrets Manager's connection-strings collection (the task's --connections). */
  connections: string;
  /** What `pulumi up` puts in the connection-strings collection for a raw stack config. */
  writeConnections(config: Record<string, unknown>): void;
  close(): Promise<void>;
}

/**
 * A database (the SQL providers configured with its admin login, an empty publish schema), the hub emulator, the
 * loopback S3 with `bucket` in it, and the task's bundle built. Stacks use `db.adminUrl` (rawStackConfigFor).
 */
export async function startPlatformServices(options: {
  name: string;
  bucket: string;
  emulator?: Partial<EmulatorConfigInput>;
}): Promise<PlatformServices> {
  const [db] = await Promise.all([createTestDatabase(options.name), taskBundle()]);
  const pool = new Pool({ connectionString: db.url, max: 2 });
  const hub = await startEmulator({ config: emulatorConfig(options.emulator) });
  const s3 = await startLoopbackS3({ buckets: [options.bucket] });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hub-export-${options.name}-`));
  // The warehouse as RDS gives it: the platform's part as its DBA (the empty publish schema, the HR loader's), then
  // the SQL providers log in as the admin, as `pulumi up` does.
  await standInForDba({
    superuserUrl: db.url,
    database: db.name,
    ...PLATFORM_ROLES,
    scope: { publishSchema: "publish", stagingSchema: "staging", publishTableOwners: [] },
  });
  await configureSqlProviders(databaseConfigOf(pgConnectionOf(db.adminUrl)));
  const connections = path.join(dir, "connections");
  return {
    db,
    pool,
    hub,
    s3,
    env: loopbackAwsEnv(s3.url),
    connections,
    writeConnections(config) {
      const installation = installationOf(validateStackConfig(config, { source: "test", stack: "test" }), {
        template: loadPipelineTemplate(),
        ...loadSqlSources(),
      });
      writeConnectionRecords(connections, installation.connections);
    },
    async close() {
      await pool.end();
      await Promise.all([hub.close(), s3.close()]);
      await db.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
