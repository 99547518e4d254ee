/** Pointing the AWS SDK at the loopback S3 (test/support/s3.ts). */
import { startS3Emulator, type S3Emulator, type S3EmulatorOptions } from "./s3";

/** The AWS SDK's variables for the loopback S3: its endpoint and stand-in credentials (the emulator checks no signature). */
export function loopbackAwsEnv(s3Url: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_S3: s3Url,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_REGION: "us-east-1",
  };
}

/** Sets (or, for undefined, removes) these variables of this process; the result puts them back. */
export function setEnv(env: Record<string, string | undefined>): () => void {
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  apply(env);
  return () => apply(saved);
}

/** A loopback S3 that this process's AWS SDK clients reach; `close` also puts the environment back. */
export async function startLoopbackS3(options: S3EmulatorOptions): Promise<S3Emulator> {
  const s3 = await startS3Emulator(options);
  const restoreEnv = setEnv(loopbackAwsEnv(s3.url));
  return {
    ...s3,
    async close() {
      restoreEnv();
      await s3.close();
    },
  };
}
