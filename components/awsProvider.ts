/**
 * The stack's AWS provider: the `aws:` config as the default provider reads it, plus the default tags `project`,
 * `stack`, `client` and `environment` on every taggable resource (docs/pulumi-reference.md, "Tags and costs").
 * Explicit, because the tags come from the validated `hubExport:` config, which the default provider cannot read.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { PROJECT_NAME, type StackConfig } from "../config/schema";
import { ALLOWED_ACCOUNTS_KEY, accountIdText } from "../config/preflight";

/** The tags every taggable AWS resource of the stack carries, and the keys the cost query groups by. */
export function stackTags(
  config: Pick<StackConfig, "clientName" | "environment">,
  stack: string,
): Record<string, string> {
  return { project: PROJECT_NAME, stack, client: config.clientName, environment: config.environment };
}

/** The provider's account-id lists: `pulumi config set --path` may store their entries as numbers. */
const ACCOUNT_ID_LISTS = [ALLOWED_ACCOUNTS_KEY, "aws:forbiddenAccountIds"];

/**
 * The runtime's own test of whether a config key is secret: no typed public API offers it (@pulumi/pulumi 3.248.0), so
 * it is reached through the public `pulumi.runtime` namespace, and an SDK without it fails here, never plain secrets.
 */
function isConfigSecret(key: string): boolean {
  const test = (pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret;
  if (typeof test !== "function") throw new Error("@pulumi/pulumi's runtime no longer has isConfigSecret");
  return test(key);
}

/**
 * The provider's arguments from the stack's `aws:` keys as the engine holds them (JSON text for all but strings), with
 * the stack's tags over any `aws:defaultTags`; account ids as text, secrets (keys, tokens) still secret.
 */
export function awsProviderArgs(
  all: Record<string, string>,
  tags: Record<string, string>,
  isSecret: (key: string) => boolean = () => false,
): aws.ProviderArgs {
  const args: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(all)) {
    if (!key.startsWith("aws:")) continue;
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // plain text
    }
    if (ACCOUNT_ID_LISTS.includes(key) && Array.isArray(value))
      value = (value as unknown[]).map((id) => accountIdText(id) ?? id);
    args[key.slice("aws:".length)] = isSecret(key) ? pulumi.secret(value) : value;
  }
  const own = (args.defaultTags as { tags?: Record<string, string> } | undefined)?.tags ?? {};
  return { ...args, defaultTags: { tags: { ...own, ...tags } } };
}

export function stackAwsProvider(config: StackConfig, stack: string): aws.Provider {
  return new aws.Provider("aws", awsProviderArgs(pulumi.runtime.allConfig(), stackTags(config, stack), isConfigSecret));
}
