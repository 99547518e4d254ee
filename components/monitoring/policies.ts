/**
 * The alerts' resource policies, as pure functions of resolved ARNs (see components/policies.ts for the shapes).
 * Only the stack's EventBridge rules and CloudWatch alarms may publish to its topic, and the topic's key is usable by
 * those two services and administrable by the account, with every action named but the one AWS documents for
 * EventBridge (kms:GenerateDataKey*).
 */
import { allow, document, sorted, type AccountScope, type PolicyDocument } from "../policies";

/** Key administration, for the account's IAM principals (IAM policies decide who): every action named. */
export const KEY_ADMIN_ACTIONS = [
  "kms:CancelKeyDeletion",
  "kms:CreateAlias",
  "kms:DeleteAlias",
  "kms:DescribeKey",
  "kms:DisableKey",
  "kms:DisableKeyRotation",
  "kms:EnableKey",
  "kms:EnableKeyRotation",
  "kms:GetKeyPolicy",
  "kms:GetKeyRotationStatus",
  "kms:ListAliases",
  "kms:ListKeyPolicies",
  "kms:ListKeyRotations",
  "kms:ListResourceTags",
  "kms:PutKeyPolicy",
  "kms:RotateKeyOnDemand",
  "kms:ScheduleKeyDeletion",
  "kms:TagResource",
  "kms:UntagResource",
  "kms:UpdateAlias",
  "kms:UpdateKeyDescription",
];

/** What a publisher to a KMS-encrypted topic needs on its key. */
const PUBLISH_KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey"];

/**
 * The alerts key. In a key policy, Resource "*" is the key itself. EventBridge and CloudWatch publish to the
 * encrypted topic (the AWS-managed SNS key cannot be used by them); the account's principals may publish a test
 * message through SNS; nobody else uses it.
 */
export function alertsKeyPolicy(scope: AccountScope): PolicyDocument {
  const root = `arn:${scope.partition}:iam::${scope.accountId}:root`;
  return document(
    allow("KeyAdministrationByTheAccount", {
      Principal: { AWS: root },
      Action: KEY_ADMIN_ACTIONS,
      Resource: "*",
    }),
    allow("AccountPublishesThroughSns", {
      Principal: { AWS: root },
      Action: PUBLISH_KEY_ACTIONS,
      Resource: "*",
      Condition: {
        StringEquals: { "kms:ViaService": `sns.${scope.region}.amazonaws.com`, "kms:CallerAccount": scope.accountId },
      },
    }),
    // Only on behalf of this account's alarms (confused-deputy guard): another account's alarm that names this topic
    // cannot use its key.
    allow("CloudWatchPublishes", {
      Principal: { Service: "cloudwatch.amazonaws.com" },
      Action: PUBLISH_KEY_ACTIONS,
      Resource: "*",
      Condition: { StringEquals: { "aws:SourceAccount": scope.accountId } },
    }),
    // SNS developer guide, "Enable compatibility between event sources from AWS services and encrypted topics": source
    // conditions are not supported for EventBridge-to-encrypted topics; the topic policy admits only our rules.
    allow("EventBridgePublishes", {
      Principal: { Service: "events.amazonaws.com" },
      Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
      Resource: "*",
    }),
  );
}

export interface AlertsTopicPolicyInput {
  topicArn: string;
  accountId: string;
  /** The EventBridge rules that notify the topic. */
  ruleArns: readonly string[];
  /** The CloudWatch alarms that notify the topic. */
  alarmArns: readonly string[];
}

/** The topic: exactly the stack's rules and alarms may publish; nothing else is granted. */
export function alertsTopicPolicy(input: AlertsTopicPolicyInput): PolicyDocument {
  return document(
    allow("TaskStopRules", {
      Principal: { Service: "events.amazonaws.com" },
      Action: "sns:Publish",
      Resource: input.topicArn,
      Condition: { ArnEquals: { "aws:SourceArn": sorted(input.ruleArns) } },
    }),
    allow("ExportAlarms", {
      Principal: { Service: "cloudwatch.amazonaws.com" },
      Action: "sns:Publish",
      Resource: input.topicArn,
      Condition: {
        ArnEquals: { "aws:SourceArn": sorted(input.alarmArns) },
        StringEquals: { "aws:SourceAccount": input.accountId },
      },
    }),
  );
}
