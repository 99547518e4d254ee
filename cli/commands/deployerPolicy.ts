/** `hub-export deployer-policy`: the IAM policy of a stack's deployer (or CI preview role), from its offline plan. */
import path from "node:path";
import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, stackSelection } from "../stackOptions";
import { readStackFileConfig, stackFilePath } from "../../config/load";
import { ALLOWED_ACCOUNTS_KEY, accountIdText } from "../../config/preflight";
import { stripPlaceholders } from "../../config/placeholders";
import { UsageError, UserError } from "../../core/errors";

const ROLES = ["deployer", "preview"] as const;

/** The one account and the region the stack file pins, placeholders read as their examples. */
function accountAndRegion(file: string): { accountId: string; region: string } {
  const { value: all } = stripPlaceholders(readStackFileConfig(file));
  const name = path.basename(file);
  const ids = all[ALLOWED_ACCOUNTS_KEY];
  const fix = `pulumi config set --path '${ALLOWED_ACCOUNTS_KEY}[0]' <12-digit account id>`;
  if (!Array.isArray(ids) || ids.length === 0)
    throw new UserError(`${name}: ${ALLOWED_ACCOUNTS_KEY} is not set: the policy names the stack's account; ${fix}`);
  if (ids.length > 1)
    throw new UserError(
      `${name}: ${ALLOWED_ACCOUNTS_KEY} lists ${ids.length} accounts: the policy names one; keep the account the stack deploys to`,
    );
  const accountId = accountIdText(ids[0]);
  if (!accountId) throw new UserError(`${name}: ${ALLOWED_ACCOUNTS_KEY}[0] must be a 12-digit AWS account id; ${fix}`);
  const region = all["aws:region"];
  if (typeof region !== "string" || region.trim() === "")
    throw new UserError(
      `${name}: aws:region is not set: the policy names the stack's region; pulumi config set aws:region <region>`,
    );
  return { accountId, region: region.trim() };
}

export default defineCommand({
  summary:
    "Print the IAM policy a stack's deployer needs (or its CI preview role's, reads only), as JSON: each action on the ARNs of the stack's own resources in its account and region, from the offline plan",
  options: {
    ...stackOptions,
    role: {
      type: "string",
      value: "ROLE",
      description:
        "Whose policy: deployer (the identity that runs 'pulumi up') or preview (the CI role that runs 'pulumi preview': its reads, nothing written, no secret read)",
      default: "deployer",
      example: "--role preview",
    },
  },
  details: [
    "The policy is derived from the resources the program registers for the stack (as 'hub-export plan --full' lists them) and the AWS SDK calls of its own providers: creates must carry the stack's tags (project, stack, client, environment) where the service can check them, roles may be passed only to the service that uses each, the stack's KMS keys are its by their tags, and Resource \"*\" holds only the actions AWS authorises on nothing else (statement ActionsAwsAuthorisesOnlyOnStar, and kms:CreateKey). An adopted bucket and key get only the reads and writes the program makes, on their ARNs.",
    "The account is aws:allowedAccountIds (one), the region aws:region. A PLACEHOLDER: value is read as its example, as 'plan' does.",
  ],
  examples: [
    { command: "hub-export deployer-policy --stack prod", does: "the policy of prod's deployer, for its account" },
    {
      command: "hub-export deployer-policy --stack qa --role preview > preview-qa.json",
      does: "the policy of qa's CI preview role, to attach to it",
    },
  ],
  exitCodes: { 1: "the stack config is invalid, or names no single account or no region" },
  async run(values, io) {
    const role = values.role ?? "deployer";
    if (!(ROLES as readonly string[]).includes(role))
      throw new UsageError(`--role must be one of ${ROLES.join(", ")}, got '${role}'`);
    // Validates the stack file first: config problems are reported like `hub-export validate` does.
    loadFromOptions(values);
    const selection = stackSelection(values);
    const file = path.resolve(selection.file ?? stackFilePath(selection.stack!));
    const account = accountAndRegion(file);
    // Loaded here, not at the top: `hub-export --help` must not pay for the Pulumi SDK.
    const { planStackFile } = await import("../../components/planner/index.js");
    const { deployerPolicy } = await import("../../components/deployerPolicy.js");
    const invokes: { token: string; inputs: Record<string, unknown> }[] = [];
    const run = await planStackFile({
      ...(values.file ? { file } : { stack: selection.stack }),
      account: { ...account, invokes },
    });
    io.stdout.write(`${JSON.stringify(deployerPolicy(run, invokes, role as (typeof ROLES)[number]), null, 2)}\n`);
    return 0;
  },
});
