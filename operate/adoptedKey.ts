/**
 * A stack's given KMS key (`hubExport:bucket.kmsKeyArn`, prod's adopted key), checked with AWS credentials before
 * `pulumi up`: its key policy, read with kms:GetKeyPolicy (an alias resolved with kms:DescribeKey), held against what
 * the stack needs of it (core/keyPolicy.ts): CloudWatch Logs for the task's log group, the task role, and the caller,
 * who runs the check as the deployer runs `pulumi up`. Each gap comes with the statement to add.
 */
import { DescribeKeyCommand, GetKeyPolicyCommand, KMSClient } from "@aws-sdk/client-kms";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { keyPolicyGaps, type KeyPolicyGap, type KeyUser } from "../core/keyPolicy";
import { awsClientCredentials, type AwsAccess } from "../providers/awsAccess";
import { untimed, type CheckResult } from "../task/probe/checks";

export interface AdoptedKeyInput {
  /** The key's ARN, or an alias ARN. */
  keyArn: string;
  /** The task's log group (`/ecs/<task name>`), which CloudWatch Logs encrypts with the key. */
  logGroupName: string;
  /** The task role's name (the role is in the key's account). */
  taskRoleName: string;
  /** The stack's AWS access; default: the SDK's default credentials. */
  access?: AwsAccess;
}

export type AdoptedKeyCheck =
  { keyArn: string; gaps: KeyPolicyGap[]; users: KeyUser[] } | { keyArn: string; unreadable: string };

/** `arn:<partition>:kms:<region>:<account>:key/<id>` or `...:alias/<name>`. */
function parseKeyArn(arn: string): { partition: string; region: string; accountId: string } | undefined {
  const m = /^arn:([^:]+):kms:([^:]+):(\d{12}):(?:key|alias)\/.+$/.exec(arn);
  return m ? { partition: m[1], region: m[2], accountId: m[3] } : undefined;
}

/** A caller's ARN as a key policy names it: an assumed role's session as its role (without the path STS drops). */
export function principalOfCaller(arn: string): string {
  const m = /^arn:([^:]+):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(arn);
  return m ? `arn:${m[1]}:iam::${m[2]}:role/${m[3]}` : arn;
}

const failure = (err: unknown) => `${(err as Error).name ?? "Error"}: ${(err as Error).message}`;

/** Reads the key's policy and the caller, and says what the policy lacks. Never throws for AWS's answers. */
export async function checkAdoptedKey(input: AdoptedKeyInput): Promise<AdoptedKeyCheck> {
  const scope = parseKeyArn(input.keyArn);
  if (!scope) return { keyArn: input.keyArn, unreadable: `${input.keyArn} is not a KMS key or alias ARN` };
  const credentials = awsClientCredentials(input.access, scope.region);
  const kms = new KMSClient({ region: scope.region, ...credentials });
  const sts = new STSClient({ region: scope.region, ...credentials });
  let keyArn = input.keyArn;
  try {
    if (keyArn.includes(":alias/")) {
      try {
        keyArn = (await kms.send(new DescribeKeyCommand({ KeyId: keyArn }))).KeyMetadata?.Arn ?? keyArn;
      } catch (err) {
        return {
          keyArn,
          unreadable: `cannot resolve alias ${keyArn} (kms:DescribeKey): ${failure(err)}; check the alias, and give the caller kms:DescribeKey on its key`,
        };
      }
    }
    let policy: string | undefined;
    try {
      policy = (await kms.send(new GetKeyPolicyCommand({ KeyId: keyArn, PolicyName: "default" }))).Policy;
    } catch (err) {
      return {
        keyArn,
        unreadable: `cannot read the key policy (kms:GetKeyPolicy): ${failure(err)}; run this with credentials of account ${scope.accountId} that may read it, or ask the key's administrators to check it against docs/pulumi.md's prerequisites`,
      };
    }
    let caller: string | undefined;
    try {
      caller = (await sts.send(new GetCallerIdentityCommand({}))).Arn;
    } catch {
      // Without the caller, the deployer is not checked; the rest still is.
    }
    const users: KeyUser[] = [
      {
        label: "the task role",
        arn: `arn:${scope.partition}:iam::${scope.accountId}:role/${input.taskRoleName}`,
        // It reads its definition, scripts and connection records (components/policies.ts taskRolePolicy).
        actions: ["kms:Decrypt"],
      },
      // The caller runs `pulumi up` as the deployer: S3 and Secrets Manager ask the key for it.
      ...(caller
        ? [{ label: "the deployer", arn: principalOfCaller(caller), actions: ["kms:Decrypt", "kms:GenerateDataKey"] }]
        : []),
    ];
    try {
      return { keyArn, gaps: keyPolicyGaps(policy ?? "{}", scope, input.logGroupName, users), users };
    } catch (err) {
      return { keyArn, unreadable: `its key policy is not a policy document (${(err as Error).message})` };
    }
  } finally {
    kms.destroy();
    sts.destroy();
  }
}

/** The check as the probe's rows: one per gap (each with the statement to add), or one saying the policy suffices. */
export function adoptedKeyCheckResults(check: AdoptedKeyCheck): CheckResult[] {
  const endpoint = `KMS key ${check.keyArn}`;
  if ("unreadable" in check) return [untimed(endpoint, "key policy", check.unreadable, "FAIL", true)];
  if (check.gaps.length === 0)
    return [
      untimed(
        endpoint,
        "key policy",
        `lets CloudWatch Logs use it for the task's log group, and ${check.users.map((u) => u.label).join(" and ")} through IAM or by name`,
        "ok",
      ),
    ];
  return check.gaps.map((gap) =>
    untimed(endpoint, `key policy: ${gap.who}`, `${gap.missing}; add: ${JSON.stringify(gap.add)}`, "FAIL", true),
  );
}
