/**
 * Whether the SDK finds AWS credentials (its default chain: environment, AWS_PROFILE and ~/.aws, SSO, web identity,
 * the container's or instance's role), and how to give them when it does not. Loaded only for s3:// and
 * secretsmanager: locations.
 */

/** Why no credentials were found, or undefined when the chain resolves some. */
export async function missingAwsCredentials(): Promise<string | undefined> {
  const { S3Client } = require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3");
  const client = new S3Client({});
  try {
    await client.config.credentials();
    return undefined;
  } catch (err) {
    return (err as Error).message.split("\n")[0];
  } finally {
    client.destroy();
  }
}

/** How to give the SDK credentials, for a message. */
export const AWS_CREDENTIALS_HOWTO =
  "set AWS_PROFILE=<profile> of the stack's account (with SSO, run 'aws sso login --profile <profile>' first), " +
  "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)";
