/**
 * `probe`'s check of a stack's given KMS key (`hubExport:bucket.kmsKeyArn`): the stack's names (components/naming.ts)
 * handed to operate/adoptedKey.ts, its rows in the probe's table. A stack whose key the stack creates has none.
 */
import type { StackConfig } from "../config/schema";
import { taskNames } from "../components/naming";
import type { AwsAccess } from "../providers/awsAccess";
import type { CheckResult } from "../task/probe/checks";

export async function adoptedKeyChecks(
  config: Pick<StackConfig, "bucket" | "clientName" | "environment">,
  access?: AwsAccess,
): Promise<CheckResult[]> {
  const keyArn = config.bucket.kmsKeyArn;
  if (!keyArn) return [];
  const { checkAdoptedKey, adoptedKeyCheckResults } = await import("../operate/adoptedKey.js");
  const names = taskNames(config);
  return adoptedKeyCheckResults(
    await checkAdoptedKey({ keyArn, logGroupName: names.logGroupName, taskRoleName: names.roles.task, access }),
  );
}
