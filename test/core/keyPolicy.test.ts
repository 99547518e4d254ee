/**
 * What a given KMS key's policy lacks (core/keyPolicy.ts): CloudWatch Logs for the task's log group (the regional
 * principal, the documented actions, the log group's encryption context), and each key user, by the statement that
 * enables IAM policies or by name. Each gap carries the statement that closes it.
 */
import { describe, expect, it } from "vitest";
import { keyPolicy } from "../../components/policies";
import { enableIamPoliciesStatement, keyPolicyGaps, logsKeyStatement, type KeyUser } from "../../core/keyPolicy";

const SCOPE = { partition: "aws", region: "us-east-1", accountId: "210987654321" };
const LOG_GROUP = "/ecs/hub-export-acme-prod";
const LOG_GROUP_ARN = "arn:aws:logs:us-east-1:210987654321:log-group:/ecs/hub-export-acme-prod";
const TASK: KeyUser = {
  label: "the task role",
  arn: "arn:aws:iam::210987654321:role/hub-export-acme-prod-task",
  actions: ["kms:Decrypt"],
};
const DEPLOYER: KeyUser = {
  label: "the deployer",
  arn: "arn:aws:iam::210987654321:role/platform-deployer",
  actions: ["kms:Decrypt", "kms:GenerateDataKey"],
};
const USERS = [TASK, DEPLOYER];
const policy = (...Statement: unknown[]) => JSON.stringify({ Version: "2012-10-17", Statement });
const logs = (condition?: unknown, actions: unknown = logsKeyStatement(SCOPE, LOG_GROUP).Action) => ({
  Effect: "Allow",
  Principal: { Service: "logs.us-east-1.amazonaws.com" },
  Action: actions,
  Resource: "*",
  ...(condition === undefined ? {} : { Condition: condition }),
});
const whoLacks = (text: string, users = USERS) => keyPolicyGaps(text, SCOPE, LOG_GROUP, users).map((g) => g.who);

describe("a given key's policy", () => {
  it("the stack's own key policy lacks nothing", () => {
    expect(keyPolicyGaps(keyPolicy(SCOPE, LOG_GROUP), SCOPE, LOG_GROUP, USERS)).toEqual([]);
    expect(keyPolicyGaps(JSON.stringify(keyPolicy(SCOPE, LOG_GROUP)), SCOPE, LOG_GROUP, USERS)).toEqual([]);
  });

  it("the default key policy lacks CloudWatch Logs, and the gap is the statement AWS documents", () => {
    const gaps = keyPolicyGaps(policy(enableIamPoliciesStatement("aws", SCOPE.accountId)), SCOPE, LOG_GROUP, USERS);
    expect(gaps).toEqual([
      {
        who: `CloudWatch Logs, for the task's log group ${LOG_GROUP}`,
        missing: `no statement lets logs.us-east-1.amazonaws.com use the key for ${LOG_GROUP_ARN} (kms:Decrypt*, kms:Describe*, kms:Encrypt*, kms:GenerateDataKey*, kms:ReEncrypt*): the log group cannot be created with it`,
        add: {
          Sid: "EncryptTheTaskLogGroup",
          Effect: "Allow",
          Principal: { Service: "logs.us-east-1.amazonaws.com" },
          Action: ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
          Resource: "*",
          Condition: { ArnEquals: { "kms:EncryptionContext:aws:logs:arn": LOG_GROUP_ARN } },
        },
      },
    ]);
  });

  it("CloudWatch Logs: the log group's ARN, a pattern covering it, or no condition; not another group or region", () => {
    const root = enableIamPoliciesStatement("aws", SCOPE.accountId);
    const context = "kms:EncryptionContext:aws:logs:arn";
    expect(whoLacks(policy(root, logs({ ArnLike: { [context]: "arn:aws:logs:us-east-1:210987654321:*" } })))).toEqual(
      [],
    );
    expect(whoLacks(policy(root, logs({ ArnEquals: { [context]: [LOG_GROUP_ARN, "arn:x"] } })))).toEqual([]);
    expect(whoLacks(policy(root, logs(undefined, "kms:*")))).toEqual([]);
    const lacksLogs = [`CloudWatch Logs, for the task's log group ${LOG_GROUP}`];
    expect(whoLacks(policy(root, logs({ ArnEquals: { [context]: `${LOG_GROUP_ARN}-old` } })))).toEqual(lacksLogs);
    expect(whoLacks(policy(root, { ...logs(), Principal: { Service: "logs.eu-west-1.amazonaws.com" } }))).toEqual(
      lacksLogs,
    );
    // A condition the check cannot tell CloudWatch Logs meets.
    expect(whoLacks(policy(root, logs({ StringEquals: { "aws:SourceAccount": SCOPE.accountId } })))).toEqual(lacksLogs);
    // Named actions: each call behind the documented wildcards must be there.
    const named = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncryptFrom", "kms:GenerateDataKey", "kms:DescribeKey"];
    const [gap] = keyPolicyGaps(policy(root, logs(undefined, named)), SCOPE, LOG_GROUP, USERS);
    expect(gap.missing).toContain("(kms:ReEncrypt* missing)");
    expect(whoLacks(policy(root, logs(undefined, [...named, "kms:ReEncryptTo"])))).toEqual([]);
  });

  it("a key user: through the statement that enables IAM policies, or named for its actions", () => {
    const account = SCOPE.accountId;
    const named = (arn: string, actions: string[]) => ({
      Effect: "Allow",
      Principal: { AWS: arn },
      Action: actions,
      Resource: "*",
    });
    // The account id alone names the account as its root does.
    expect(
      whoLacks(policy({ ...enableIamPoliciesStatement("aws", account), Principal: { AWS: account } }, logs())),
    ).toEqual([]);
    // Named instead: the task role for kms:Decrypt; the deployer (an assumed role's session names its role without
    // the path) by its role with a path.
    const gaps = keyPolicyGaps(
      policy(
        logs(),
        named(TASK.arn, ["kms:Decrypt"]),
        named("arn:aws:iam::210987654321:role/ops/platform-deployer", ["kms:Decrypt"]),
      ),
      SCOPE,
      LOG_GROUP,
      USERS,
    );
    expect(gaps).toEqual([
      {
        who: `the deployer (${DEPLOYER.arn})`,
        missing:
          "the key policy neither names it for kms:GenerateDataKey nor enables IAM policies (Principal arn:aws:iam::210987654321:root, kms:*)",
        add: {
          Sid: "DeployerUsesTheKey",
          Effect: "Allow",
          Principal: { AWS: DEPLOYER.arn },
          Action: ["kms:GenerateDataKey"],
          Resource: "*",
        },
      },
    ]);
    // The root statement with a condition, or for some actions only, does not enable IAM policies.
    const conditioned = {
      ...enableIamPoliciesStatement("aws", account),
      Condition: { Bool: { "aws:SecureTransport": "true" } },
    };
    expect(whoLacks(policy(conditioned, logs()))).toEqual([
      "the task role (" + TASK.arn + ")",
      "the deployer (" + DEPLOYER.arn + ")",
    ]);
    expect(
      whoLacks(policy({ ...enableIamPoliciesStatement("aws", account), Action: ["kms:Describe*"] }, logs()), [TASK]),
    ).toEqual([`the task role (${TASK.arn})`]);
  });

  it("an unconditional Deny takes away what an Allow gives", () => {
    const root = enableIamPoliciesStatement("aws", SCOPE.accountId);
    const deny = { Effect: "Deny", Principal: "*", Action: "kms:Decrypt", Resource: "*" };
    expect(whoLacks(policy(root, logs(), deny))).toEqual([
      `CloudWatch Logs, for the task's log group ${LOG_GROUP}`,
      `the task role (${TASK.arn})`,
      `the deployer (${DEPLOYER.arn})`,
    ]);
    // A conditional Deny (say, outside the organization) is not held against them.
    const scoped = { ...deny, Condition: { StringNotEquals: { "aws:PrincipalOrgID": "o-abc" } } };
    expect(whoLacks(policy(root, logs(), scoped))).toEqual([]);
  });

  it("refuses what is not a key policy", () => {
    expect(() => keyPolicyGaps("{not json", SCOPE, LOG_GROUP, USERS)).toThrow();
    expect(() => keyPolicyGaps("{}", SCOPE, LOG_GROUP, USERS)).toThrow("the key policy has no Statement");
  });
});
