/**
 * The AWS access of what the program does through the AWS SDK itself (the bucket's dynamic providers, the adopted
 * bucket's guard): the same credentials and account check as the stack's AWS provider, from the same `aws:` config
 * (keys or profile, then `aws:assumeRoles`; the account checked against `aws:allowedAccountIds`). Without `configure`
 * (local mode, tests) the SDK's default chain. Serialized provider code: providers/README.md.
 */

/** One entry of `aws:assumeRoles`, as the AWS provider takes it. */
export interface AwsAssumeRole {
  roleArn: string;
  sessionName?: string;
  externalId?: string;
  /** A duration as the provider writes it: `1h`, `15m`, `1h30m`, `900s`. */
  duration?: string;
  policy?: string;
  policyArns?: string[];
  tags?: Record<string, string>;
  transitiveTagKeys?: string[];
  sourceIdentity?: string;
}

export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** The stack's `aws:` settings for SDK clients. */
export interface AwsAccess {
  region?: string;
  stsRegion?: string;
  profile?: string;
  /** `aws:accessKey` and `aws:secretKey` (and `aws:token`), when the stack config has them. */
  keys?: AwsKeys;
  assumeRoles: AwsAssumeRole[];
  allowedAccountIds: string[];
  forbiddenAccountIds: string[];
  /** Read by a dynamic provider's `configure`: a failure says which config that was and what to run. */
  fromProviderConfig?: boolean;
}

/**
 * The `aws:` keys as the engine hands them over (a dynamic provider's ConfigureRequest, pulumi.runtime.allConfig()):
 * text, lists and objects as JSON text. Account ids may be numbers (`pulumi config set --path` stores them so).
 */
export function awsAccessFromConfig(get: (key: string) => string | undefined): AwsAccess {
  const text = (key: string) => {
    const value = get(key);
    return value === undefined || value === "" ? undefined : value;
  };
  const json = (key: string): unknown => {
    const value = text(key);
    if (value === undefined) return undefined;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  };
  const ids = (key: string) => {
    const value = json(key);
    return Array.isArray(value) ? value.map((id) => String(id)) : [];
  };
  const roles = json("aws:assumeRoles");
  const [accessKey, secretKey, token] = [text("aws:accessKey"), text("aws:secretKey"), text("aws:token")];
  const access: AwsAccess = {
    region: text("aws:region"),
    stsRegion: text("aws:stsRegion"),
    profile: text("aws:profile"),
    assumeRoles: Array.isArray(roles)
      ? (roles as (Partial<AwsAssumeRole> | null)[]).filter(
          (r): r is AwsAssumeRole => typeof r?.roleArn === "string" && r.roleArn !== "",
        )
      : [],
    allowedAccountIds: ids("aws:allowedAccountIds"),
    forbiddenAccountIds: ids("aws:forbiddenAccountIds"),
  };
  if (accessKey && secretKey)
    access.keys = { accessKeyId: accessKey, secretAccessKey: secretKey, ...(token ? { sessionToken: token } : {}) };
  return access;
}

/** What a dynamic provider's `configure` read, for this process (undefined: not configured). */
export function rememberAwsAccess(access: AwsAccess | undefined): void {
  (globalThis as Record<symbol, unknown>)[Symbol.for("hub-export.aws-access")] = access;
}

export function rememberedAwsAccess(): AwsAccess | undefined {
  return (globalThis as Record<symbol, unknown>)[Symbol.for("hub-export.aws-access")] as AwsAccess | undefined;
}

/** A dynamic provider's `configure`: keeps the stack's AWS access for this process. */
export function configureAwsAccess(config: { get(key: string): string | undefined }): void {
  rememberAwsAccess({ ...awsAccessFromConfig((key) => config.get(key)), fromProviderConfig: true });
}

/** Seconds of a duration written as the AWS provider takes it (`1h30m`, `900s`); undefined when it is not one. */
export function durationSeconds(duration: string | undefined): number | undefined {
  const m = duration ? /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration) : null;
  if (!m) return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

/** How the credentials were chosen, for messages: never a key. */
function describeAccess(access: AwsAccess): string {
  const base = access.keys
    ? "aws:accessKey"
    : access.profile
      ? `aws:profile ${access.profile}`
      : "the AWS SDK's default credentials";
  return access.assumeRoles.length
    ? `${base}, then aws:assumeRoles ${access.assumeRoles.map((r) => r.roleArn).join(" → ")}`
    : base;
}

/** The stack's credentials: base keys or profile, each role assumed in turn, the account checked. */
async function resolveStackCredentials(access: AwsAccess, region: string | undefined): Promise<AwsKeys> {
  const { STSClient, AssumeRoleCommand, GetCallerIdentityCommand } =
    require("@aws-sdk/client-sts") as typeof import("@aws-sdk/client-sts");
  const stsRegion = access.stsRegion ?? access.region ?? region;
  const sts = (credentials: AwsKeys | undefined) =>
    new STSClient({
      ...(stsRegion ? { region: stsRegion } : {}),
      ...(credentials ? { credentials } : access.profile ? { profile: access.profile } : {}),
    });
  // A dynamic provider may run with the aws: config of the last `pulumi up` (destroy, refresh): say so.
  const hint = access.fromProviderConfig
    ? "; the aws: config is the one the provider was configured with: the stack's in `pulumi up`, the last up's in `pulumi destroy` and `pulumi refresh`. After changing it, run `pulumi up` first, or `pulumi refresh --run-program` / `pulumi destroy --run-program` (Pulumi CLI 3.231 or later)"
    : "";
  const failed = (what: string, err: unknown) =>
    new Error(
      `${what} (${describeAccess(access)}): ${(err as Error).name ?? "error"}: ${(err as Error).message}${hint}`,
    );

  let credentials: AwsKeys;
  const base = sts(access.keys);
  try {
    credentials = await base.config.credentials();
  } catch (err) {
    throw failed("no AWS credentials for the stack", err);
  } finally {
    base.destroy();
  }
  for (const [i, role] of access.assumeRoles.entries()) {
    const client = sts(credentials);
    try {
      const seconds = durationSeconds(role.duration);
      const out = await client.send(
        new AssumeRoleCommand({
          RoleArn: role.roleArn,
          RoleSessionName: role.sessionName ?? `hub-export-${Date.now()}`,
          ...(role.externalId ? { ExternalId: role.externalId } : {}),
          ...(seconds ? { DurationSeconds: seconds } : {}),
          ...(role.policy ? { Policy: role.policy } : {}),
          ...(role.policyArns?.length ? { PolicyArns: role.policyArns.map((arn) => ({ arn })) } : {}),
          ...(role.tags ? { Tags: Object.entries(role.tags).map(([Key, Value]) => ({ Key, Value })) } : {}),
          ...(role.transitiveTagKeys?.length ? { TransitiveTagKeys: role.transitiveTagKeys } : {}),
          ...(role.sourceIdentity ? { SourceIdentity: role.sourceIdentity } : {}),
        }),
      );
      const c = out.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error("the answer holds no credentials");
      credentials = {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
        ...(c.Expiration ? { expiration: c.Expiration } : {}),
      };
    } catch (err) {
      throw failed(`cannot assume aws:assumeRoles[${i}] ${role.roleArn}`, err);
    } finally {
      client.destroy();
    }
  }

  const { allowedAccountIds: allowed, forbiddenAccountIds: forbidden } = access;
  if (allowed.length > 0 || forbidden.length > 0) {
    const client = sts(credentials);
    let account: string;
    try {
      account = (await client.send(new GetCallerIdentityCommand({}))).Account ?? "";
    } catch (err) {
      throw failed("cannot check the AWS account of the stack's credentials (sts:GetCallerIdentity)", err);
    } finally {
      client.destroy();
    }
    if ((allowed.length > 0 && !allowed.includes(account)) || forbidden.includes(account)) {
      const rule =
        allowed.length > 0 && !allowed.includes(account)
          ? `not in aws:allowedAccountIds (${allowed.join(", ")})`
          : "in aws:forbiddenAccountIds";
      throw new Error(
        `the AWS credentials (${describeAccess(access)}) are of account ${account}, ${rule}: nothing was read or written with them${hint}`,
      );
    }
  }
  return credentials;
}

/**
 * An SDK client's credentials as the stack's AWS provider has them: resolved once (again shortly before they expire),
 * the account checked before the first request. `{}` when `access` is undefined: the SDK's default chain.
 */
export function awsClientCredentials(
  access: AwsAccess | undefined,
  region: string | undefined,
): { credentials?: () => Promise<AwsKeys> } {
  if (!access) return {};
  const slot = access as AwsAccess & { [cache: symbol]: Promise<AwsKeys> | undefined };
  const cache = Symbol.for("hub-export.aws-credentials");
  return {
    async credentials() {
      const cached = slot[cache];
      const valid =
        cached &&
        (await cached.then(
          (c) => !c.expiration || c.expiration.getTime() - Date.now() > 5 * 60_000,
          () => false,
        ));
      if (valid) return cached;
      const resolving = resolveStackCredentials(access, region);
      slot[cache] = resolving;
      return resolving;
    },
  };
}
