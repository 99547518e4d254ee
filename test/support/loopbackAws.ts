/** Pointing the AWS SDK at the loopback S3 (emulator/s3.ts). */
import { startS3Emulator, type S3Emulator, type S3EmulatorOptions } from "../../emulator/s3";

/** The AWS SDK's variables for the loopback S3: its endpoint and stand-in credentials (the emulator checks no signature). */
export function loopbackAwsEnv(s3Url: string): Record<string, string> {
  return { AWS_ENDPOINT_URL_S3: s3Url, AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test", AWS_REGION: "us-east-1" };
}

/** Sets this process's AWS SDK environment for the loopback S3; `restore` puts it back. */
function loopbackAwsEnvironment(s3Url: string): { env: Record<string, string>; restore(): void } {
  const env = loopbackAwsEnv(s3Url);
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, env);
  return {
    env,
    restore() {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    },
  };
}

/** A loopback S3 that this process's AWS SDK clients reach; `close` also puts the environment back. */
export async function startLoopbackS3(options: S3EmulatorOptions): Promise<S3Emulator> {
  const s3 = await startS3Emulator(options);
  const aws = loopbackAwsEnvironment(s3.url);
  return {
    ...s3,
    async close() {
      aws.restore();
      await s3.close();
    },
  };
}
