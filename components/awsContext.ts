/** The account, region and partition a stack deploys to, for ARNs and policy conditions. */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface AwsContext {
  region: pulumi.Output<string>;
  accountId: pulumi.Output<string>;
  partition: pulumi.Output<string>;
}

export function awsContext(parent: pulumi.Resource): AwsContext {
  const opts = { parent };
  return {
    region: aws.getRegionOutput({}, opts).region,
    accountId: aws.getCallerIdentityOutput({}, opts).accountId,
    partition: aws.getPartitionOutput({}, opts).partition,
  };
}
