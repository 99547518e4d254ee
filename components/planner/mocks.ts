/**
 * Offline stand-ins for what the cloud would return: ids, ARNs and the few invokes the program makes. Every value is
 * derived from the resource's name, so that a plan is the same on every run and on every machine.
 */
import crypto from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { OFFLINE_OBJECT_TAGS_TOKEN } from "../storage/objectGuard";

export interface MockAccount {
  accountId: string;
  region: string;
  partition: string;
  /** Objects already in the buckets, `<bucket>/<key>` → their tags (tests of an adopted bucket); none by default. */
  existingObjects?: Record<string, Record<string, string>>;
  /** When set, every invoke's token and inputs are appended here (tests). */
  invokes?: { token: string; inputs: Record<string, unknown> }[];
}

export const DEFAULT_MOCK_ACCOUNT: MockAccount = { accountId: "123456789012", region: "us-east-1", partition: "aws" };
/** The creation time of every offline resource that reports one. */
export const OFFLINE_CREATE_DATE = "2026-11-01T00:00:00Z";

type State = Record<string, unknown>;

const short = (text: string, length: number) => crypto.createHash("sha256").update(text).digest("hex").slice(0, length);
/** A KMS key id (a UUID) derived from `text`. */
const keyIdOf = (text: string) => {
  const h = short(text, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};
const plain = (value: unknown): unknown =>
  pulumi.runtime.isRpcSecret(value) ? pulumi.runtime.unwrapRpcSecret(value) : value;
const str = (value: unknown): string | undefined =>
  typeof plain(value) === "string" ? (plain(value) as string) : undefined;

/** Marks `keys` of `state` secret, as the engine does for additionalSecretOutputs. */
export function markSecret(state: State, keys: readonly string[]): State {
  for (const key of keys) {
    if (state[key] !== undefined && !pulumi.runtime.isRpcSecret(state[key]))
      state[key] = { [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig, value: state[key] };
  }
  return state;
}

/** The id and output state of a registered or read resource: its inputs plus what the provider would compute. */
export function mockResource(
  args: pulumi.runtime.MockResourceArgs,
  account: MockAccount,
): { id: string; state: State } {
  const { accountId: acct, region, partition } = account;
  const inputs: State = { ...(args.inputs as State) };
  const name = str(inputs.name) ?? args.name;
  const arn = (service: string, resource: string, withRegion = true) =>
    `arn:${partition}:${service}:${withRegion ? region : ""}:${acct}:${resource}`;
  switch (args.type) {
    case "aws:s3/bucket:Bucket": {
      const bucket = str(inputs.bucket) ?? args.id ?? args.name;
      return { id: bucket, state: { ...inputs, bucket, arn: `arn:${partition}:s3:::${bucket}`, region } };
    }
    case "aws:kms/key:Key": {
      const keyId = keyIdOf(args.name);
      return { id: keyId, state: { ...inputs, keyId, arn: arn("kms", `key/${keyId}`) } };
    }
    case "aws:kms/alias:Alias":
      return { id: name, state: { ...inputs, arn: arn("kms", name) } };
    case "aws:secretsmanager/secret:Secret": {
      const secretArn = arn("secretsmanager", `secret:${name}-${short(name, 6)}`);
      return { id: secretArn, state: { ...inputs, arn: secretArn } };
    }
    case "aws:secretsmanager/secretVersion:SecretVersion":
      return { id: `${args.name}|v1`, state: { ...inputs, versionId: short(args.name, 32) } };
    case "aws:iam/role:Role":
      // createDate: a fixed stand-in, so that a plan is the same on every run.
      return {
        id: name,
        state: {
          ...inputs,
          name,
          arn: `arn:${partition}:iam::${acct}:role/${name}`,
          uniqueId: `AROA${short(name, 16).toUpperCase()}`,
          createDate: OFFLINE_CREATE_DATE,
        },
      };
    case "aws:iam/rolePolicy:RolePolicy":
      return { id: `${str(inputs.role) ?? "role"}:${name}`, state: inputs };
    case "aws:cloudwatch/logGroup:LogGroup":
      return { id: name, state: { ...inputs, name, arn: arn("logs", `log-group:${name}`) } };
    case "aws:ecr/repository:Repository":
      return {
        id: name,
        state: {
          ...inputs,
          name,
          arn: arn("ecr", `repository/${name}`),
          registryId: acct,
          repositoryUrl: `${acct}.dkr.ecr.${region}.amazonaws.com/${name}`,
        },
      };
    case "aws:ecs/cluster:Cluster":
      return { id: arn("ecs", `cluster/${name}`), state: { ...inputs, name, arn: arn("ecs", `cluster/${name}`) } };
    case "aws:ecs/taskDefinition:TaskDefinition": {
      const family = str(inputs.family) ?? args.name;
      const withoutRevision = arn("ecs", `task-definition/${family}`);
      return {
        id: family,
        state: { ...inputs, revision: 1, arn: `${withoutRevision}:1`, arnWithoutRevision: withoutRevision },
      };
    }
    case "aws:scheduler/schedule:Schedule":
      return {
        id: `default/${name}`,
        state: { ...inputs, name, arn: arn("scheduler", `schedule/${str(inputs.groupName) ?? "default"}/${name}`) },
      };
    case "aws:sns/topic:Topic":
      return { id: arn("sns", name), state: { ...inputs, name, arn: arn("sns", name) } };
    case "aws:sns/topicSubscription:TopicSubscription": {
      const topic = str(inputs.topic) ?? "topic";
      return { id: `${topic}:${short(args.name, 8)}`, state: { ...inputs, arn: `${topic}:${short(args.name, 8)}` } };
    }
    case "aws:cloudwatch/eventRule:EventRule":
      return { id: name, state: { ...inputs, name, arn: arn("events", `rule/${name}`) } };
    case "aws:sqs/queue:Queue":
      return {
        id: `https://sqs.${region}.amazonaws.com/${acct}/${name}`,
        state: { ...inputs, name, arn: arn("sqs", name), url: `https://sqs.${region}.amazonaws.com/${acct}/${name}` },
      };
    case "aws:cloudwatch/metricAlarm:MetricAlarm":
      return { id: name, state: { ...inputs, name, arn: arn("cloudwatch", `alarm:${name}`) } };
    case "aws:cloudwatch/compositeAlarm:CompositeAlarm": {
      const alarmName = str(inputs.alarmName) ?? args.name;
      return { id: alarmName, state: { ...inputs, alarmName, arn: arn("cloudwatch", `alarm:${alarmName}`) } };
    }
    case "aws:cloudwatch/dashboard:Dashboard": {
      const dashboardName = str(inputs.dashboardName) ?? args.name;
      return {
        id: dashboardName,
        state: {
          ...inputs,
          dashboardName,
          dashboardArn: `arn:${partition}:cloudwatch::${acct}:dashboard/${dashboardName}`,
        },
      };
    }
    case "docker-build:index:Image": {
      // The pushed image's digest: a stand-in derived from its tags (the content hash).
      const digest = `sha256:${short(JSON.stringify(plain(inputs.tags) ?? args.name), 64)}`;
      return { id: digest, state: { ...inputs, digest } };
    }
    default:
      return { id: args.id ?? `${args.name}-id`, state: inputs };
  }
}

/** Results of the invokes the program makes; anything else is an error, so a new invoke cannot slip through unseen. */
export function mockCall(args: pulumi.runtime.MockCallArgs, account: MockAccount): Record<string, unknown> {
  const { accountId: acct, region, partition } = account;
  const inputs = args.inputs as State;
  account.invokes?.push({ token: args.token, inputs: { ...inputs } });
  switch (args.token) {
    case "aws:index/getRegion:getRegion":
      return {
        id: region,
        name: region,
        region,
        description: `offline stand-in for ${region}`,
        endpoint: `ec2.${region}.amazonaws.com`,
      };
    case "aws:index/getCallerIdentity:getCallerIdentity":
      return {
        id: acct,
        accountId: acct,
        arn: `arn:${partition}:iam::${acct}:user/offline-plan`,
        userId: "OFFLINEPLAN",
      };
    case "aws:ecr/getAuthorizationToken:getAuthorizationToken":
      // The image push's registry login.
      return { id: region, userName: "AWS", password: "offline-ecr-token" };
    case "aws:index/getPartition:getPartition":
      return { id: partition, partition, dnsSuffix: "amazonaws.com", reverseDnsPrefix: "com.amazonaws" };
    case "aws:kms/getKey:getKey": {
      // An alias ARN resolves to a key of the alias's account and region, the same on every run; a key ARN to itself.
      const keyId = String(inputs.keyId);
      const m = /^arn:([^:]+):kms:([^:]*):(\d{12}):(alias|key)\/(.+)$/.exec(keyId);
      const id = m?.[4] === "key" ? m[5] : keyIdOf(keyId);
      const arn = `arn:${m?.[1] ?? partition}:kms:${m?.[2] || region}:${m?.[3] ?? acct}:key/${id}`;
      return {
        id,
        keyId: id,
        arn,
        keyState: "Enabled",
        keyUsage: "ENCRYPT_DECRYPT",
        keySpec: "SYMMETRIC_DEFAULT",
        enabled: true,
      };
    }
    case OFFLINE_OBJECT_TAGS_TOKEN: {
      // An adopted bucket's guard (components/storage/objectGuard.ts): the tags of the keys among the account's
      // objects; by default none of the stack's keys is there yet.
      const keys = inputs.keys as string[];
      const found = Object.fromEntries(
        keys.flatMap((key) =>
          account.existingObjects?.[`${String(inputs.bucket)}/${key}`]
            ? [[key, account.existingObjects[`${String(inputs.bucket)}/${key}`]]]
            : [],
        ),
      );
      return { found };
    }
    default:
      throw new Error(`no offline stand-in for the invoke ${args.token}: add one to components/planner/mocks.ts`);
  }
}
