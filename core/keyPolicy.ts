/**
 * What a stack's KMS key policy must allow, and what a given key's policy lacks (`hubExport:bucket.kmsKeyArn`, the
 * adopted key of prod). CloudWatch Logs encrypts the task's log group with it only if the key policy lets the
 * regional logs principal use it for that log group (CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs
 * using AWS Key Management Service"); IAM policies (the task role's, the deployer's) count only where the key policy
 * enables them (KMS developer guide, "Default key policy") or names the role itself. Pure: the policy document in,
 * each missing item with the statement to add out.
 */

export interface KeyPolicyStatement {
  Sid: string;
  Effect: "Allow";
  Principal: { AWS: string } | { Service: string };
  Action: string | string[];
  Resource: "*";
  Condition?: Record<string, Record<string, string>>;
}

/** The account's IAM policies decide for its principals: the default key policy's one statement. */
export function enableIamPoliciesStatement(partition: string, accountId: string): KeyPolicyStatement {
  return {
    Sid: "DelegateToIamPolicies",
    Effect: "Allow",
    Principal: { AWS: `arn:${partition}:iam::${accountId}:root` },
    Action: "kms:*",
    Resource: "*",
  };
}

/** What CloudWatch Logs needs of the key, for this log group only (the encryption context AWS documents). */
export const LOGS_KEY_ACTIONS = [
  "kms:Decrypt*",
  "kms:Describe*",
  "kms:Encrypt*",
  "kms:GenerateDataKey*",
  "kms:ReEncrypt*",
];

export function logGroupArn(scope: { partition: string; region: string; accountId: string }, name: string): string {
  return `arn:${scope.partition}:logs:${scope.region}:${scope.accountId}:log-group:${name}`;
}

export function logsKeyStatement(
  scope: { partition: string; region: string; accountId: string },
  logGroupName: string,
): KeyPolicyStatement {
  return {
    Sid: "EncryptTheTaskLogGroup",
    Effect: "Allow",
    Principal: { Service: `logs.${scope.region}.amazonaws.com` },
    Action: LOGS_KEY_ACTIONS,
    Resource: "*",
    Condition: { ArnEquals: { "kms:EncryptionContext:aws:logs:arn": logGroupArn(scope, logGroupName) } },
  };
}

/** A role that uses the key through IAM, and the KMS actions it needs. */
export interface KeyUser {
  /** Who, for a person: `the task role`, `the deployer`. */
  label: string;
  /** Its ARN: a role's (`arn:aws:iam::<account>:role/<path><name>`), or a user's. */
  arn: string;
  actions: string[];
}

export interface KeyPolicyGap {
  /** Who cannot use the key: `CloudWatch Logs, for log group /ecs/...`, `the task role (arn:...)`. */
  who: string;
  /** What is missing, in one line. */
  missing: string;
  /** A statement that, added to the key policy, gives it. */
  add: KeyPolicyStatement;
}

interface Statement {
  Sid?: string;
  Effect?: string;
  Principal?: unknown;
  NotPrincipal?: unknown;
  Action?: unknown;
  NotAction?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const list = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((v) => String(v));

/** `kms:Encrypt*` as a regular expression: IAM's `*` and `?`, case-insensitive. */
function glob(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${body}$`, "i");
}

/** The KMS actions behind each wildcard AWS documents for CloudWatch Logs: what a statement must cover. */
const LOGS_CALLS: Record<string, string[]> = {
  "kms:Decrypt*": ["kms:Decrypt"],
  "kms:Describe*": ["kms:DescribeKey"],
  "kms:Encrypt*": ["kms:Encrypt"],
  "kms:GenerateDataKey*": ["kms:GenerateDataKey"],
  "kms:ReEncrypt*": ["kms:ReEncryptFrom", "kms:ReEncryptTo"],
};

/** The statement's actions cover `action` (a concrete one), or every call behind a documented wildcard. */
function covers(statement: Statement, action: string): boolean {
  if (statement.NotAction !== undefined) return false;
  return (LOGS_CALLS[action] ?? [action]).every((call) => list(statement.Action).some((a) => glob(a).test(call)));
}

/** The statement's actions touch one of the calls behind `action` (a Deny of any of them refuses it). */
function touches(statement: Statement, action: string): boolean {
  if (statement.NotAction !== undefined) return true;
  return (LOGS_CALLS[action] ?? [action]).some((call) => list(statement.Action).some((a) => glob(a).test(call)));
}

/** The principals of a statement: AWS ARNs (an account id as its root), services, or everyone. */
function principalsOf(statement: Statement, partition: string): { aws: string[]; service: string[]; anyone: boolean } {
  const p = statement.Principal;
  if (p === "*") return { aws: [], service: [], anyone: true };
  const map = (p ?? {}) as Record<string, unknown>;
  const aws = list(map.AWS).map((a) => (/^\d{12}$/.test(a) ? `arn:${partition}:iam::${a}:root` : a));
  return { aws, service: list(map.Service), anyone: aws.includes("*") };
}

/** The same role: an assumed-role session or a role ARN with a path name the role by account and name. */
function sameIdentity(principal: string, arn: string): boolean {
  const parse = (a: string) => {
    const m = /^arn:[^:]+:(?:iam|sts)::(\d{12}):(role|assumed-role|user)\/(.+)$/.exec(a);
    if (!m) return undefined;
    const kind = m[2] === "user" ? "user" : "role";
    // assumed-role/<name>/<session>; role/<path>/<name>.
    const parts = m[3].split("/");
    return `${m[1]} ${kind} ${m[2] === "assumed-role" ? parts[0] : parts[parts.length - 1]}`;
  };
  const a = parse(principal);
  return a !== undefined && a === parse(arn);
}

/** The log group ARN `values` admit, for the operator (ArnLike and StringLike match patterns). */
function admits(operator: string, values: string[], arn: string): boolean {
  const base = operator.replace(/IfExists$/, "");
  if (base === "ArnEquals" || base === "StringEquals") return values.includes(arn);
  if (base === "ArnLike" || base === "StringLike") return values.some((v) => glob(v).test(arn));
  return false;
}

/** Conditions that CloudWatch Logs' requests for the log group meet: none, or the log group's encryption context. */
function logsConditionsMet(statement: Statement, arn: string): boolean {
  for (const [operator, entries] of Object.entries(statement.Condition ?? {}))
    for (const [key, values] of Object.entries(entries)) {
      if (key.toLowerCase() !== "kms:encryptioncontext:aws:logs:arn") return false;
      if (!admits(operator, list(values), arn)) return false;
    }
  return true;
}

/** Parses a key policy, or says why it is not one. */
function statementsOf(policy: unknown): Statement[] {
  const doc = typeof policy === "string" ? (JSON.parse(policy) as unknown) : policy;
  const statements = (doc as { Statement?: unknown } | null)?.Statement;
  if (statements === undefined) throw new Error("the key policy has no Statement");
  return (Array.isArray(statements) ? statements : [statements]) as Statement[];
}

/**
 * What the key policy lacks for the task's log group and for each key user. `policy` is the document (or its JSON
 * text, as kms:GetKeyPolicy returns it); the scope is the key's own account and region.
 */
export function keyPolicyGaps(
  policy: unknown,
  scope: { partition: string; region: string; accountId: string },
  logGroupName: string,
  users: readonly KeyUser[],
): KeyPolicyGap[] {
  const statements = statementsOf(policy);
  const gaps: KeyPolicyGap[] = [];
  const { partition, accountId } = scope;
  const root = `arn:${partition}:iam::${accountId}:root`;
  const denied = (matches: (p: ReturnType<typeof principalsOf>) => boolean, action: string) =>
    statements.find(
      (s) =>
        s.Effect === "Deny" &&
        s.NotPrincipal === undefined &&
        s.Condition === undefined &&
        (principalsOf(s, partition).anyone || matches(principalsOf(s, partition))) &&
        touches(s, action),
    );
  const allows = (s: Statement) => s.Effect === "Allow" && s.NotPrincipal === undefined;

  // CloudWatch Logs, for the task's log group.
  const logs = `logs.${scope.region}.amazonaws.com`;
  const arn = logGroupArn(scope, logGroupName);
  const forLogs = statements.filter(
    (s) => allows(s) && principalsOf(s, partition).service.includes(logs) && logsConditionsMet(s, arn),
  );
  const lacking = LOGS_KEY_ACTIONS.filter(
    (a) => !forLogs.some((s) => covers(s, a)) || denied((p) => p.service.includes(logs), a),
  );
  if (lacking.length)
    gaps.push({
      who: `CloudWatch Logs, for the task's log group ${logGroupName}`,
      missing: `no statement lets ${logs} use the key for ${arn} (${lacking.join(", ")}${forLogs.length ? " missing" : ""}): the log group cannot be created with it`,
      add: logsKeyStatement(scope, logGroupName),
    });

  // The key users: the statement that enables IAM policies (their IAM policies then decide), or one naming them.
  const enablesIam = statements.some(
    (s) =>
      allows(s) &&
      s.Condition === undefined &&
      principalsOf(s, partition).aws.includes(root) &&
      list(s.Action).some((a) => a === "kms:*" || a === "*"),
  );
  for (const user of users) {
    const named = (p: ReturnType<typeof principalsOf>) => p.aws.some((a) => sameIdentity(a, user.arn));
    const lackingFor = user.actions.filter(
      (action) =>
        denied((p) => named(p) || p.aws.includes(root), action) !== undefined ||
        (!enablesIam && !statements.some((s) => allows(s) && named(principalsOf(s, partition)) && covers(s, action))),
    );
    if (lackingFor.length)
      gaps.push({
        who: `${user.label} (${user.arn})`,
        missing: `the key policy neither names it for ${lackingFor.join(", ")} nor enables IAM policies (Principal ${root}, kms:*)`,
        add: {
          Sid:
            user.label.replace(/^the /, "").replace(/(^|\s)(\w)/g, (_m, _s, c: string) => c.toUpperCase()) +
            "UsesTheKey",
          Effect: "Allow",
          Principal: { AWS: user.arn },
          Action: lackingFor,
          Resource: "*",
        },
      });
  }
  return gaps;
}
