/**
 * The IAM policy of whoever runs `pulumi up` for a stack (`hub-export deployer-policy`), derived from the stack's
 * offline plan: every action on the ARNs of this stack's own resources, as the plan names them. Creates carry the
 * provider's default tags (components/awsProvider.ts) where the service can condition on them, roles may be passed
 * only to the service that uses each, KMS keys (whose ARNs exist only once created) are ours by their tags, and `*`
 * holds only the actions AWS authorises on nothing else. The CI preview role (`--role preview`) gets the reads alone.
 * test/components/deployerPolicy.test.ts evaluates both with an IAM policy simulator against the requests the
 * providers make.
 */
import type { PlanRun, PlannedResource } from "./planner";
import { revealValue } from "./planner/values";
import { allow, document, sorted, type PolicyDocument, type PolicyStatement } from "./policies";

export type PolicyRole = "deployer" | "preview";

/** An invoke the program made while planned (the planner's MockAccount.invokes). */
export interface PlannedInvoke {
  token: string;
  inputs: Record<string, unknown>;
}

/** One statement before the role is applied: `read` goes to both roles, `deploy` to the deployer only. */
interface Grant {
  sid: string;
  read?: string[];
  deploy?: string[];
  resources: string[];
  condition?: PolicyStatement["Condition"];
}

/** Resource types that make no AWS call of their own (the warehouse's, the hub's, the components). */
const NO_AWS_CALLS = new Set([
  "pulumi:providers:postgresql",
  "postgresql:index/role:Role",
  "postgresql:index/grant:Grant",
  "postgresql:index/defaultPrivileges:DefaultPrivileges",
  "pulumi-nodejs:dynamic/hubExport:ConfigRow",
  "pulumi-nodejs:dynamic/hubExport:SqlBaseline",
  "pulumi-nodejs:dynamic/hubExport:ClientRunTables",
  "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet",
]);

/** The tag keys that say a resource is this stack's (the provider's default tags; project and stack identify it). */
const OWNER_TAG_KEYS = ["project", "stack"] as const;

/** S3's reads of a bucket's configuration, as the AWS provider reads an `aws.s3.Bucket` (created or adopted). */
const BUCKET_READS = [
  "s3:GetAccelerateConfiguration",
  "s3:GetBucketAcl",
  "s3:GetBucketCORS",
  "s3:GetBucketLocation",
  "s3:GetBucketLogging",
  "s3:GetBucketObjectLockConfiguration",
  "s3:GetBucketPolicy",
  "s3:GetBucketRequestPayment",
  "s3:GetBucketVersioning",
  "s3:GetBucketWebsite",
  "s3:GetEncryptionConfiguration",
  "s3:GetLifecycleConfiguration",
  "s3:GetReplicationConfiguration",
  "s3:ListBucket",
  "s3:ListTagsForResource",
];

/** A bucket's sub-resources: what each reads and writes (their deletes are authorised by the Put action). */
const BUCKET_PARTS: Record<string, { read: string[]; deploy: string[] }> = {
  "aws:s3/bucketPolicy:BucketPolicy": {
    read: ["s3:GetBucketPolicy"],
    deploy: ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy"],
  },
  "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {
    read: ["s3:GetBucketPublicAccessBlock"],
    deploy: ["s3:PutBucketPublicAccessBlock"],
  },
  "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {
    read: ["s3:GetEncryptionConfiguration"],
    deploy: ["s3:PutEncryptionConfiguration"],
  },
  "aws:s3/bucketVersioning:BucketVersioning": { read: ["s3:GetBucketVersioning"], deploy: ["s3:PutBucketVersioning"] },
  "aws:s3/bucketOwnershipControls:BucketOwnershipControls": {
    read: ["s3:GetBucketOwnershipControls"],
    deploy: ["s3:PutBucketOwnershipControls"],
  },
  "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": {
    read: ["s3:GetLifecycleConfiguration"],
    deploy: ["s3:PutLifecycleConfiguration"],
  },
  "aws:s3/bucketLogging:BucketLogging": { read: ["s3:GetBucketLogging"], deploy: ["s3:PutBucketLogging"] },
};

/** The files of the shared scripts folder the credential-file provider reads and writes (providers/scriptFiles.ts). */
const SCRIPT_FOLDER_FILES = [
  "credentials.ini",
  "tenant_credentials.txt",
  "credentials_template.ini",
  "tenant_credentials_template.txt",
];

type Inputs = Record<string, unknown>;
const inputsOf = (r: PlannedResource) => revealValue(r.inputs) as Inputs;
const stateOf = (r: PlannedResource) => revealValue(r.state ?? {}) as Inputs;
const text = (value: unknown) => (typeof value === "string" ? value : undefined);
const json = (value: unknown): unknown => {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
};

/** `OurBucketAcmePlatformQa` from `acme-platform-qa`: a Sid may hold letters and digits only. */
function sidPart(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join("");
}

/** Adds values to a list kept in a map. */
function push<K>(map: Map<K, string[]>, key: K, ...values: string[]) {
  map.set(key, [...(map.get(key) ?? []), ...values]);
}

/** What the plan says of the stack: its account, tags, and each resource's names. */
function stackOf(run: PlanRun) {
  const { accountId, region, partition } = run.account;
  const arn = (service: string, resource: string, regional = true) =>
    `arn:${partition}:${service}:${regional ? region : ""}:${accountId}:${resource}`;
  const provider = run.resources.find((r) => r.type === "pulumi:providers:aws");
  if (!provider) throw new Error("the plan has no AWS provider (components/awsProvider.ts)");
  const providerInputs = inputsOf(provider);
  const tags = (json(providerInputs.defaultTags) as { tags?: Record<string, string> } | undefined)?.tags ?? {};
  for (const key of OWNER_TAG_KEYS)
    if (!tags[key])
      throw new Error(`the AWS provider of the plan has no default tag ${key} (components/awsProvider.ts)`);
  const assumeRoles = ((json(providerInputs.assumeRoles) as { roleArn?: string }[] | undefined) ?? [])
    .map((r) => r.roleArn)
    .filter((a): a is string => typeof a === "string" && a !== "");
  return { accountId, region, partition, arn, tags, assumeRoles };
}

/** `{"aws:RequestTag/<key>": value}` for every default tag. */
function requestTags(tags: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:RequestTag/${k}`, v]));
}

/** The resources of the plan, each type's names as ARNs, and the grants they need. */
export function deployerPolicy(run: PlanRun, invokes: readonly PlannedInvoke[], role: PolicyRole): PolicyDocument {
  const stack = stackOf(run);
  const { arn, partition, region } = stack;
  const grants: Grant[] = [];
  const ofType = (type: string) => run.resources.filter((r) => r.custom && r.type === type);
  const tagged = requestTags(stack.tags);
  const owned = Object.fromEntries(OWNER_TAG_KEYS.map((k) => [`aws:ResourceTag/${k}`, stack.tags[k]]));

  // A delete action, unless every resource it would delete is retained on delete (the engine never deletes those).
  const deletable = (resources: PlannedResource[], ...actions: string[]) =>
    resources.some((r) => !r.options.retainOnDelete) ? actions : [];

  const unknown = run.resources.filter(
    (r) => r.custom && !NO_AWS_CALLS.has(r.type) && !HANDLED.has(r.read ? `read ${r.type}` : r.type),
  );
  if (unknown.length)
    throw new Error(
      `no deployer-policy rule for resource type ${[...new Set(unknown.map((r) => r.type))].join(", ")}: add one to components/deployerPolicy.ts`,
    );

  // Reads AWS authorises on `*` only (the catalog lists no resource type for them).
  const starReads = ["sts:GetCallerIdentity"];
  const starDeploys: string[] = [];

  // aws:assumeRoles: the provider and the dynamic providers assume each in turn.
  if (stack.assumeRoles.length)
    grants.push({ sid: "StsAssumeTheStackRoles", read: ["sts:AssumeRole"], resources: stack.assumeRoles });

  // --- KMS: keys the stack creates are its by their tags (their ARNs exist only once created); aliases by name.
  const keys = ofType("aws:kms/key:Key");
  const createdKeyArns = new Set(keys.map((k) => text(stateOf(k).arn)));
  if (keys.length) {
    const anyKey = arn("kms", "key/*");
    grants.push(
      {
        sid: "KmsCreateKeysTaggedAsOursAuthorisedOnlyOnStar",
        deploy: ["kms:CreateKey"],
        resources: ["*"],
        condition: { StringEquals: tagged },
      },
      {
        // CreateKey's tags are authorised as kms:TagResource on every key of the account and region (KMS developer
        // guide, "Controlling access to tags"): only while the key has no stack tag and no alias yet.
        sid: "KmsTagKeysWhileCreatingThem",
        deploy: ["kms:TagResource"],
        resources: [anyKey],
        condition: { StringEquals: tagged, Null: { "aws:ResourceTag/stack": "true", "kms:ResourceAliases": "true" } },
      },
      {
        sid: "KmsOurKeys",
        read: ["kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags"],
        deploy: [
          "kms:CreateAlias",
          "kms:DeleteAlias",
          "kms:EnableKeyRotation",
          "kms:PutKeyPolicy",
          "kms:ScheduleKeyDeletion",
          "kms:TagResource",
          "kms:UntagResource",
          "kms:UpdateAlias",
          "kms:UpdateKeyDescription",
        ],
        resources: [anyKey],
        condition: { StringEquals: owned },
      },
    );
    starReads.push("kms:ListAliases");
  }
  const aliases = ofType("aws:kms/alias:Alias").map((a) => arn("kms", String(inputsOf(a).name)));
  if (aliases.length)
    grants.push({
      sid: "KmsOurAliases",
      deploy: ["kms:CreateAlias", "kms:DeleteAlias", "kms:UpdateAlias"],
      resources: sorted(aliases),
    });

  // The data key: S3 and Secrets Manager ask it for data keys with the deployer's credentials.
  const dataKeyUsers = [
    ...ofType("aws:secretsmanager/secret:Secret").map((s) => text(inputsOf(s).kmsKeyId)),
    ...ofType("aws:s3/bucketObjectv2:BucketObjectv2").map((o) => text(inputsOf(o).kmsKeyId)),
    ...[
      ...ofType("pulumi-nodejs:dynamic/hubExport:SharedObject"),
      ...ofType("pulumi-nodejs:dynamic/hubExport:ScriptFileEntries"),
      ...ofType("pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles"),
    ].map((r) => text((inputsOf(r).location as Inputs | undefined)?.kmsKeyArn)),
  ].filter((k): k is string => k !== undefined);
  const viaService = { "kms:ViaService": [`s3.${region}.amazonaws.com`, `secretsmanager.${region}.amazonaws.com`] };
  const dataKeyActions = ["kms:Decrypt", "kms:GenerateDataKey"];
  if (dataKeyUsers.some((k) => createdKeyArns.has(k)))
    grants.push({
      sid: "KmsOurKeysThroughS3AndSecretsManager",
      deploy: dataKeyActions,
      resources: [arn("kms", "key/*")],
      condition: { StringEquals: { ...owned, ...viaService } },
    });
  // A given key (hubExport:bucket.kmsKeyArn): by its ARN, or, given as an alias, by that alias.
  const aliasLookups = invokes
    .filter((i) => i.token === "aws:kms/getKey:getKey")
    .map((i) => String(i.inputs.keyId))
    .filter((id) => /:alias\//.test(id));
  const adoptedKeys = sorted(dataKeyUsers.filter((k) => !createdKeyArns.has(k)));
  if (aliasLookups.length) {
    const names = sorted(aliasLookups.map((a) => a.slice(a.indexOf(":alias/") + 1)));
    const byAlias = { "ForAnyValue:StringEquals": { "kms:ResourceAliases": names } };
    grants.push({
      sid: "KmsDescribeTheGivenKey",
      read: ["kms:DescribeKey"],
      resources: [arn("kms", "key/*")],
      condition: byAlias,
    });
    if (adoptedKeys.length)
      grants.push({
        sid: "KmsTheGivenKeyThroughS3AndSecretsManager",
        deploy: dataKeyActions,
        resources: [arn("kms", "key/*")],
        condition: { ...byAlias, StringEquals: viaService },
      });
  } else if (adoptedKeys.length) {
    grants.push({
      sid: "KmsTheGivenKeyThroughS3AndSecretsManager",
      deploy: dataKeyActions,
      resources: adoptedKeys,
      condition: { StringEquals: viaService },
    });
  }

  // --- S3: buckets the stack creates are wholly its own; in an adopted bucket, exactly its keys.
  const bucketArn = (name: string) => `arn:${partition}:s3:::${name}`;
  const createdBuckets = ofType("aws:s3/bucket:Bucket").filter((b) => !b.read);
  const created = new Set(createdBuckets.map((b) => String(inputsOf(b).bucket)));
  const parts = new Map<string, { read: string[]; deploy: string[] }>();
  for (const [type, actions] of Object.entries(BUCKET_PARTS))
    for (const r of ofType(type)) {
      const bucket = String(inputsOf(r).bucket);
      const part = parts.get(bucket) ?? { read: [], deploy: [] };
      part.read.push(...actions.read);
      part.deploy.push(...actions.deploy);
      parts.set(bucket, part);
    }
  // What the stack does to objects: its own (tagged, guarded in an adopted bucket), the shared ones (written only where
  // absent, or merged under If-Match; never deleted), a scripts release's (written, and others deleted).
  const OWN = { read: ["s3:GetObject", "s3:GetObjectTagging"], deploy: ["s3:PutObject", "s3:PutObjectTagging"] };
  const OWN_DELETE = ["s3:DeleteObject", "s3:DeleteObjectVersion"];
  const SHARED = { read: ["s3:GetObject"], deploy: ["s3:PutObject"] };
  const CREDENTIAL_FILES = { read: [], deploy: ["s3:GetObject", "s3:PutObject"] };
  // The release's folder holds the credential files too: nothing of it is a preview's to read.
  const RELEASE = { read: [], deploy: ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"] };
  type Objects = { read: Set<string>; deploy: Set<string>; keys: Set<string>; listVersions: boolean };
  const objects = new Map<string, Map<string, Objects>>();
  const add = (bucket: string, kind: string, actions: { read: string[]; deploy: string[] }, ...keys: string[]) => {
    const kinds = objects.get(bucket) ?? new Map<string, Objects>();
    const o = kinds.get(kind) ?? { read: new Set(), deploy: new Set(), keys: new Set(), listVersions: false };
    actions.read.forEach((a) => o.read.add(a));
    actions.deploy.forEach((a) => o.deploy.add(a));
    keys.forEach((k) => o.keys.add(k));
    kinds.set(kind, o);
    objects.set(bucket, kinds);
    return o;
  };
  for (const o of ofType("aws:s3/bucketObjectv2:BucketObjectv2")) {
    const { bucket, key } = inputsOf(o) as { bucket: string; key: string };
    // In a versioned bucket the provider deletes an object version by version; retained ones are never deleted.
    const retained = o.options.retainOnDelete === true;
    const own = add(
      bucket,
      "Our",
      { read: OWN.read, deploy: retained ? OWN.deploy : [...OWN.deploy, ...OWN_DELETE] },
      key,
    );
    if (!retained) own.listVersions = true;
  }
  const s3Location = (r: PlannedResource) => {
    const location = inputsOf(r).location as { kind?: string; bucket?: string; prefix?: string } | undefined;
    return location?.kind === "s3" && location.bucket
      ? { bucket: location.bucket, prefix: location.prefix ?? "" }
      : undefined;
  };
  for (const r of ofType("pulumi-nodejs:dynamic/hubExport:SharedObject")) {
    const at = s3Location(r);
    if (at) add(at.bucket, "Shared", SHARED, `${at.prefix}${String(inputsOf(r).key)}`);
  }
  // The credential files hold the tenants' secrets: never a preview's to read.
  for (const r of ofType("pulumi-nodejs:dynamic/hubExport:ScriptFileEntries")) {
    const at = s3Location(r);
    if (at) add(at.bucket, "CredentialFile", CREDENTIAL_FILES, ...SCRIPT_FOLDER_FILES.map((f) => `${at.prefix}${f}`));
  }
  for (const r of ofType("pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles")) {
    const at = s3Location(r);
    if (at) add(at.bucket, "ScriptsRelease", RELEASE, `${at.prefix}*`);
  }

  for (const b of createdBuckets) {
    const name = String(inputsOf(b).bucket);
    const part = parts.get(name) ?? { read: [], deploy: [] };
    const kinds = [...(objects.get(name)?.values() ?? [])];
    // forceDestroy empties the bucket version by version.
    const emptying = inputsOf(b).forceDestroy === true;
    const listVersions = emptying || kinds.some((k) => k.listVersions) ? ["s3:ListBucketVersions"] : [];
    grants.push({
      sid: `S3OurBucket${sidPart(name)}`,
      read: [...BUCKET_READS, ...part.read],
      deploy: [
        "s3:CreateBucket",
        "s3:DeleteBucket",
        "s3:TagResource",
        "s3:UntagResource",
        ...listVersions,
        ...part.deploy,
      ],
      resources: [bucketArn(name)],
    });
    // The bucket is wholly the stack's: its objects by the bucket's wildcard, the credential files among them, so
    // none is a preview's to read (a preview reads no object of a bucket it created).
    const deploy = [...kinds.flatMap((k) => [...k.read, ...k.deploy]), ...(emptying ? ["s3:DeleteObjectVersion"] : [])];
    if (deploy.length)
      grants.push({ sid: `S3ObjectsOfOurBucket${sidPart(name)}`, deploy, resources: [`${bucketArn(name)}/*`] });
  }
  // The adopted bucket: read (the provider's read, the guard's 404s), never changed; in it, exactly the stack's keys.
  const adopted = ofType("aws:s3/bucket:Bucket")
    .filter((b) => b.read)
    .map((b) => String(b.id));
  for (const name of adopted) {
    const listVersions = [...(objects.get(name)?.values() ?? [])].some((k) => k.listVersions);
    grants.push({
      sid: `S3ReadTheAdoptedBucket${sidPart(name)}`,
      read: BUCKET_READS,
      deploy: listVersions ? ["s3:ListBucketVersions"] : [],
      resources: [bucketArn(name)],
    });
  }
  for (const [bucket, kinds] of objects) {
    if (created.has(bucket)) continue;
    for (const [kind, o] of kinds)
      grants.push({
        sid: `S3${kind}ObjectsInTheAdoptedBucket${sidPart(bucket)}`,
        read: [...o.read],
        deploy: [...o.deploy],
        resources: sorted([...o.keys].map((k) => `${bucketArn(bucket)}/${k}`)),
      });
  }

  // --- Secrets Manager: the connection store's records, by their common prefix.
  const secrets = ofType("aws:secretsmanager/secret:Secret").map((s) => String(inputsOf(s).name));
  if (secrets.length) {
    const prefixes = sorted(secrets.map((n) => `${n.slice(0, n.lastIndexOf("/") + 1)}*`));
    const resources = prefixes.map((p) => arn("secretsmanager", `secret:${p}`));
    grants.push(
      {
        sid: "SecretsCreateOurConnectionRecordsTaggedAsOurs",
        deploy: ["secretsmanager:CreateSecret"],
        resources,
        condition: { StringEquals: tagged },
      },
      {
        sid: "SecretsOurConnectionRecords",
        read: ["secretsmanager:DescribeSecret", "secretsmanager:GetResourcePolicy"],
        deploy: [
          "secretsmanager:DeleteSecret",
          "secretsmanager:GetSecretValue",
          "secretsmanager:PutSecretValue",
          "secretsmanager:TagResource",
          "secretsmanager:UntagResource",
          "secretsmanager:UpdateSecret",
          "secretsmanager:UpdateSecretVersionStage",
        ],
        resources,
      },
    );
  }

  // --- IAM: the stack's roles by name, each passed only to the service that uses it.
  const roleArn = (name: string) => `arn:${partition}:iam::${stack.accountId}:role/${name}`;
  const roles = sorted(ofType("aws:iam/role:Role").map((r) => roleArn(String(inputsOf(r).name))));
  if (roles.length)
    grants.push(
      {
        sid: "IamCreateOurRolesTaggedAsOurs",
        deploy: ["iam:CreateRole"],
        resources: roles,
        condition: { StringEquals: tagged },
      },
      {
        sid: "IamOurRoles",
        read: ["iam:GetRole", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies"],
        deploy: [
          "iam:DeleteRole",
          "iam:DeleteRolePolicy",
          "iam:ListInstanceProfilesForRole",
          "iam:PutRolePolicy",
          "iam:TagRole",
          "iam:UntagRole",
          "iam:UpdateAssumeRolePolicy",
          "iam:UpdateRole",
          "iam:UpdateRoleDescription",
        ],
        resources: roles,
      },
    );
  const passed = new Map<string, string[]>();
  for (const t of ofType("aws:ecs/taskDefinition:TaskDefinition")) {
    const i = inputsOf(t);
    push(
      passed,
      "ecs-tasks.amazonaws.com",
      ...[i.taskRoleArn, i.executionRoleArn].filter((a): a is string => !!text(a)),
    );
  }
  for (const s of ofType("aws:scheduler/schedule:Schedule")) {
    const target = inputsOf(s).target as { roleArn?: string } | undefined;
    if (target?.roleArn) push(passed, "scheduler.amazonaws.com", target.roleArn);
  }
  for (const [service, passedRoles] of [...passed].sort(([a], [b]) => a.localeCompare(b)))
    grants.push({
      sid: `IamPassOurRolesTo${sidPart(service.replace(/\.amazonaws\.com$/, ""))}`,
      deploy: ["iam:PassRole"],
      resources: sorted(passedRoles),
      condition: { StringEquals: { "iam:PassedToService": service } },
    });

  // --- CloudWatch Logs: the task's log group.
  const logGroups = ofType("aws:cloudwatch/logGroup:LogGroup").map((g) => String(inputsOf(g).name));
  if (logGroups.length) {
    const resources = sorted(
      logGroups.flatMap((n) => [arn("logs", `log-group:${n}`), arn("logs", `log-group:${n}:*`)]),
    );
    grants.push(
      {
        sid: "LogsCreateOurLogGroupTaggedAsOurs",
        deploy: ["logs:CreateLogGroup"],
        resources,
        condition: { StringEquals: tagged },
      },
      {
        sid: "LogsOurLogGroup",
        read: ["logs:ListTagsForResource"],
        deploy: [
          "logs:AssociateKmsKey",
          // prod keeps its log group on delete.
          ...deletable(ofType("aws:cloudwatch/logGroup:LogGroup"), "logs:DeleteLogGroup"),
          "logs:DeleteRetentionPolicy",
          "logs:DisassociateKmsKey",
          "logs:PutRetentionPolicy",
          "logs:TagResource",
          "logs:UntagResource",
        ],
        resources,
      },
    );
    starReads.push("logs:DescribeLogGroups");
  }

  // --- ECR: the image repository of the build stack, and the image build's push.
  const repositories = ofType("aws:ecr/repository:Repository").map((r) =>
    arn("ecr", `repository/${String(inputsOf(r).name)}`),
  );
  if (repositories.length) {
    const builds = ofType("docker-build:index:Image").length > 0;
    const lifecycle = ofType("aws:ecr/lifecyclePolicy:LifecyclePolicy");
    const repositoryPolicies = ofType("aws:ecr/repositoryPolicy:RepositoryPolicy");
    grants.push(
      {
        sid: "EcrCreateOurRepositoryTaggedAsOurs",
        deploy: ["ecr:CreateRepository"],
        resources: sorted(repositories),
        condition: { StringEquals: tagged },
      },
      {
        sid: "EcrOurRepository",
        read: [
          "ecr:DescribeRepositories",
          "ecr:ListTagsForResource",
          ...(lifecycle.length ? ["ecr:GetLifecyclePolicy"] : []),
          ...(repositoryPolicies.length ? ["ecr:GetRepositoryPolicy"] : []),
        ],
        deploy: [
          "ecr:PutImageScanningConfiguration",
          "ecr:PutImageTagMutability",
          "ecr:TagResource",
          "ecr:UntagResource",
          // Retained on delete where other accounts pull from it: never deleted then.
          ...deletable(ofType("aws:ecr/repository:Repository"), "ecr:DeleteRepository"),
          ...(lifecycle.length ? ["ecr:PutLifecyclePolicy", ...deletable(lifecycle, "ecr:DeleteLifecyclePolicy")] : []),
          ...(repositoryPolicies.length
            ? ["ecr:SetRepositoryPolicy", ...deletable(repositoryPolicies, "ecr:DeleteRepositoryPolicy")]
            : []),
          // The image's push (components/task/taskImage.ts), and its read on a refresh.
          ...(builds
            ? [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:CompleteLayerUpload",
                "ecr:InitiateLayerUpload",
                "ecr:PutImage",
                "ecr:UploadLayerPart",
              ]
            : []),
        ],
        resources: sorted(repositories),
      },
    );
    // The push's registry login, which a preview fetches too (an invoke).
    if (builds) starReads.push("ecr:GetAuthorizationToken");
  }

  // --- ECS: the cluster and the task definition family.
  const clusters = ofType("aws:ecs/cluster:Cluster").map((c) => arn("ecs", `cluster/${String(inputsOf(c).name)}`));
  const families = ofType("aws:ecs/taskDefinition:TaskDefinition").map((t) =>
    arn("ecs", `task-definition/${String(inputsOf(t).family)}:*`),
  );
  if (clusters.length || families.length) {
    grants.push(
      {
        sid: "EcsCreateOursTaggedAsOurs",
        deploy: [
          ...(clusters.length ? ["ecs:CreateCluster"] : []),
          ...(families.length ? ["ecs:RegisterTaskDefinition"] : []),
        ],
        resources: sorted([...clusters, ...families]),
        condition: { StringEquals: tagged },
      },
      {
        sid: "EcsOurClusterAndTaskDefinitions",
        read: ["ecs:ListTagsForResource", ...(clusters.length ? ["ecs:DescribeClusters"] : [])],
        deploy: [
          "ecs:TagResource",
          "ecs:UntagResource",
          ...(clusters.length ? ["ecs:DeleteCluster", "ecs:UpdateCluster"] : []),
        ],
        resources: sorted([...clusters, ...families]),
      },
    );
  }
  if (families.length) {
    starReads.push("ecs:DescribeTaskDefinition");
    starDeploys.push("ecs:DeregisterTaskDefinition");
  }
  if (clusters.length)
    grants.push({
      // The account's first cluster creates ECS's service-linked role.
      sid: "IamEcsServiceLinkedRole",
      deploy: ["iam:CreateServiceLinkedRole"],
      resources: [
        `arn:${partition}:iam::${stack.accountId}:role/aws-service-role/ecs.amazonaws.com/AWSServiceRoleForECS`,
      ],
      condition: { StringEquals: { "iam:AWSServiceName": "ecs.amazonaws.com" } },
    });

  // --- SNS: the alerts topic and its subscriptions.
  const topics = ofType("aws:sns/topic:Topic").map((t) => arn("sns", String(inputsOf(t).name)));
  if (topics.length) {
    grants.push(
      {
        sid: "SnsCreateOurTopicTaggedAsOurs",
        deploy: ["sns:CreateTopic"],
        resources: sorted(topics),
        condition: { StringEquals: tagged },
      },
      {
        // A subscription's calls are authorised on its topic.
        sid: "SnsOurTopicAndItsSubscriptions",
        read: ["sns:GetSubscriptionAttributes", "sns:GetTopicAttributes", "sns:ListTagsForResource"],
        deploy: [
          "sns:DeleteTopic",
          "sns:SetSubscriptionAttributes",
          "sns:SetTopicAttributes",
          "sns:Subscribe",
          "sns:TagResource",
          "sns:Unsubscribe",
          "sns:UntagResource",
        ],
        resources: sorted(topics),
      },
    );
  }

  // --- SQS: the schedule's dead-letter queue.
  const queues = ofType("aws:sqs/queue:Queue").map((q) => arn("sqs", String(inputsOf(q).name)));
  if (queues.length)
    grants.push(
      {
        sid: "SqsCreateOurQueueTaggedAsOurs",
        deploy: ["sqs:CreateQueue"],
        resources: sorted(queues),
        condition: { StringEquals: tagged },
      },
      {
        sid: "SqsOurQueue",
        read: ["sqs:GetQueueAttributes", "sqs:ListQueueTags"],
        deploy: ["sqs:DeleteQueue", "sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:UntagQueue"],
        resources: sorted(queues),
      },
    );

  // --- EventBridge: the task-stop rules, targeting only the stack's topic.
  const rules = ofType("aws:cloudwatch/eventRule:EventRule").map((r) =>
    arn("events", `rule/${String(inputsOf(r).name)}`),
  );
  if (rules.length) {
    const targets = sorted(ofType("aws:cloudwatch/eventTarget:EventTarget").map((t) => String(inputsOf(t).arn)));
    grants.push(
      {
        // PutRule also updates a rule, without tags: tags, when sent, must be ours.
        sid: "EventsPutOurRulesTaggedAsOursWhenTagged",
        deploy: ["events:PutRule"],
        resources: sorted(rules),
        condition: { StringEqualsIfExists: tagged },
      },
      {
        sid: "EventsOurRules",
        read: ["events:DescribeRule", "events:ListTagsForResource", "events:ListTargetsByRule"],
        deploy: ["events:DeleteRule", "events:RemoveTargets", "events:TagResource", "events:UntagResource"],
        resources: sorted(rules),
      },
    );
    if (targets.length)
      grants.push({
        sid: "EventsTargetOnlyOurTopic",
        deploy: ["events:PutTargets"],
        resources: sorted(rules),
        // Multi-valued (every target of the request): each must be ours, and there must be one.
        condition: { "ForAllValues:ArnEquals": { "events:TargetArn": targets }, Null: { "events:TargetArn": "false" } },
      });
  }

  // --- CloudWatch: the alarms (notifying only the stack's topic) and the dashboard.
  const alarms = [
    ...ofType("aws:cloudwatch/metricAlarm:MetricAlarm").map((a) => String(inputsOf(a).name)),
    ...ofType("aws:cloudwatch/compositeAlarm:CompositeAlarm").map((a) => String(inputsOf(a).alarmName)),
  ].map((n) => arn("cloudwatch", `alarm:${n}`));
  if (alarms.length) {
    const puts = [
      ...(ofType("aws:cloudwatch/metricAlarm:MetricAlarm").length ? ["cloudwatch:PutMetricAlarm"] : []),
      ...(ofType("aws:cloudwatch/compositeAlarm:CompositeAlarm").length ? ["cloudwatch:PutCompositeAlarm"] : []),
    ];
    grants.push(
      {
        // The Put actions also update an alarm, without tags: tags, when sent, must be ours; actions only our topic.
        sid: "CloudWatchPutOurAlarmsTaggedAsOursWhenTagged",
        deploy: puts,
        resources: sorted(alarms),
        condition: {
          StringEqualsIfExists: tagged,
          ...(topics.length ? { "ForAllValues:StringEquals": { "cloudwatch:AlarmActions": sorted(topics) } } : {}),
        },
      },
      {
        sid: "CloudWatchOurAlarms",
        read: ["cloudwatch:DescribeAlarms", "cloudwatch:ListTagsForResource"],
        deploy: ["cloudwatch:DeleteAlarms", "cloudwatch:TagResource", "cloudwatch:UntagResource"],
        resources: sorted(alarms),
      },
    );
  }
  const dashboards = ofType("aws:cloudwatch/dashboard:Dashboard").map((d) =>
    arn("cloudwatch", `dashboard/${String(inputsOf(d).dashboardName)}`, false),
  );
  if (dashboards.length)
    grants.push({
      sid: "CloudWatchOurDashboard",
      read: ["cloudwatch:GetDashboard"],
      deploy: ["cloudwatch:DeleteDashboards", "cloudwatch:PutDashboard"],
      resources: sorted(dashboards),
    });

  // --- EventBridge Scheduler: the schedule.
  const schedules = ofType("aws:scheduler/schedule:Schedule").map((s) => {
    const i = inputsOf(s);
    return arn("scheduler", `schedule/${text(i.groupName) ?? "default"}/${String(i.name)}`);
  });
  if (schedules.length)
    grants.push({
      sid: "SchedulerOurSchedule",
      read: ["scheduler:GetSchedule"],
      deploy: ["scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:UpdateSchedule"],
      resources: sorted(schedules),
    });

  grants.unshift({
    sid: "ActionsAwsAuthorisesOnlyOnStar",
    read: starReads,
    deploy: starDeploys,
    resources: ["*"],
  });
  return document(...grants.flatMap((g) => statementOf(g, role)));
}

/** The statement of a grant for a role, or none when the role gets none of its actions. */
function statementOf(grant: Grant, role: PolicyRole): PolicyStatement[] {
  const actions = sorted([...(grant.read ?? []), ...(role === "deployer" ? (grant.deploy ?? []) : [])]);
  if (actions.length === 0) return [];
  return [
    allow(grant.sid, {
      Action: actions,
      Resource: grant.resources.length === 1 ? grant.resources[0] : grant.resources,
      ...(grant.condition ? { Condition: grant.condition } : {}),
    }),
  ];
}

/** The resource types (`read <type>` for a read) the rules above handle. */
const HANDLED = new Set([
  "pulumi:providers:aws",
  "aws:kms/key:Key",
  "aws:kms/alias:Alias",
  "aws:s3/bucket:Bucket",
  "read aws:s3/bucket:Bucket",
  ...Object.keys(BUCKET_PARTS),
  "aws:s3/bucketObjectv2:BucketObjectv2",
  "pulumi-nodejs:dynamic/hubExport:SharedObject",
  "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries",
  "pulumi-nodejs:dynamic/hubExport:ScriptsReleaseFiles",
  "aws:secretsmanager/secret:Secret",
  "aws:secretsmanager/secretVersion:SecretVersion",
  "aws:iam/role:Role",
  "aws:iam/rolePolicy:RolePolicy",
  "aws:cloudwatch/logGroup:LogGroup",
  "aws:ecr/repository:Repository",
  "aws:ecr/lifecyclePolicy:LifecyclePolicy",
  "aws:ecr/repositoryPolicy:RepositoryPolicy",
  "docker-build:index:Image",
  "aws:ecs/cluster:Cluster",
  "aws:ecs/taskDefinition:TaskDefinition",
  "aws:sns/topic:Topic",
  "aws:sns/topicPolicy:TopicPolicy",
  "aws:sns/topicSubscription:TopicSubscription",
  "aws:sqs/queue:Queue",
  "aws:cloudwatch/eventRule:EventRule",
  "aws:cloudwatch/eventTarget:EventTarget",
  "aws:cloudwatch/metricAlarm:MetricAlarm",
  "aws:cloudwatch/compositeAlarm:CompositeAlarm",
  "aws:cloudwatch/dashboard:Dashboard",
  "aws:scheduler/schedule:Schedule",
]);
