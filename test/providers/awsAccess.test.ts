/**
 * The credentials and the account of what the program does through the AWS SDK itself (the shared objects, the
 * credential files, a scripts release, the adopted bucket's guard) are the stack's AWS provider's: its aws:profile or
 * keys, its aws:assumeRoles, its aws:allowedAccountIds. Against the loopback S3 and a loopback STS that tell callers
 * apart by the access key their requests are signed with; the machine's default profile is of another account.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startS3Emulator, type S3Emulator } from "../support/s3";
import { awsAccessFromConfig, rememberAwsAccess } from "../../providers/awsAccess";
import {
  sharedObjectProvider,
  SHARED_OBJECT_PROVIDER_VERSION,
  type SharedObjectState,
} from "../../providers/sharedObjects";
import { scriptFilesProvider, SCRIPT_FILES_PROVIDER_VERSION, type ScriptFilesState } from "../../providers/scriptFiles";
import { scriptsReleaseProvider } from "../../providers/scriptsRelease";
import { foreignObjects, s3ObjectInspector } from "../../components/storage/objectGuard";
import { runProgramUnderMocks } from "../../components/planner";
import { CREDENTIALS_INI_TEMPLATE, TENANT_CREDENTIALS_TEMPLATE } from "../../core/credentialFiles";
import { createResource, deleteResource, dynamicProviderConfig, refreshResource } from "../support/engine";
import { awsProfilesEnv, startStsStandIn, type StsStandIn } from "../support/stsStandIn";
import { setEnv } from "../support/loopbackAws";

const BUCKET = "acme-platform-qa";
const SCRIPTS = "Tools/hub_python_scripts/";
const KMS = "arn:aws:kms:us-east-1:111111111111:key/11111111-2222-3333-4444-555555555555";
const TENANT = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
/** The machine's default profile: another account. The stack's profile and its successor: the stack's account. */
const KEYS = {
  default: "AKIADEFAULT0000000000",
  "acme-qa": "AKIAACMEQA0000000000",
  "acme-qa-2026": "AKIAACMEQA2026000000",
};
const ACCOUNTS = {
  [KEYS.default]: "999999999999",
  [KEYS["acme-qa"]]: "111111111111",
  [KEYS["acme-qa-2026"]]: "111111111111",
  AKIASTACKKEYS0000000: "111111111111",
};

let s3: S3Emulator;
let sts: StsStandIn;
let dir: string;
let restoreEnv: () => void;
beforeAll(async () => {
  [s3, sts] = await Promise.all([startS3Emulator({ buckets: [BUCKET] }), startStsStandIn(ACCOUNTS)]);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-aws-access-"));
  restoreEnv = setEnv({
    ...awsProfilesEnv(dir, KEYS),
    AWS_ENDPOINT_URL_S3: s3.url,
    AWS_ENDPOINT_URL_STS: sts.url,
    AWS_REGION: "us-east-1",
  });
});
afterAll(async () => {
  restoreEnv?.();
  rememberAwsAccess(undefined);
  await Promise.all([s3?.close(), sts?.close()]);
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  s3.buckets.get(BUCKET)!.clear();
  s3.requests.length = 0;
  sts.calls.length = 0;
});
afterEach(() => rememberAwsAccess(undefined));

/** Config values as the engine holds them: text, anything else as JSON; undefined ones left out. */
const engineForm = (values: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(values).flatMap(([k, v]) =>
      v === undefined ? [] : [[k, typeof v === "string" ? v : JSON.stringify(v)]],
    ),
  );
/** The stack config as the engine hands it to a dynamic provider's configure (account ids as `--path` stores them). */
const stackConfig = (values: Record<string, unknown>) => {
  const text = engineForm(values);
  return { config: { get: (key: string) => text[key], require: (key: string) => text[key] } };
};
const QA = { "aws:region": "us-east-1", "aws:profile": "acme-qa", "aws:allowedAccountIds": [111111111111] };

const shared = (key: string, content: string): SharedObjectState => ({
  location: { kind: "s3", bucket: BUCKET, prefix: "", region: "us-east-1", kmsKeyArn: KMS },
  key,
  content,
  contentType: "text/plain",
  version: SHARED_OBJECT_PROVIDER_VERSION,
});
const entries = (): ScriptFilesState => ({
  location: { kind: "s3", bucket: BUCKET, prefix: SCRIPTS, region: "us-east-1", kmsKeyArn: KMS },
  warehouseConnection: "PLAT_WAREHOUSE_QA",
  entries: { [TENANT]: "Y3JlZA===" },
  version: SCRIPT_FILES_PROVIDER_VERSION,
});
/** Steps 7.2 to 7.4 as an `up` runs them: the scripts templates, then this stack's entries. */
async function installScriptFiles() {
  await createResource(sharedObjectProvider, shared(SCRIPTS + "credentials_template.ini", CREDENTIALS_INI_TEMPLATE));
  await createResource(
    sharedObjectProvider,
    shared(SCRIPTS + "tenant_credentials_template.txt", TENANT_CREDENTIALS_TEMPLATE),
  );
  return createResource(scriptFilesProvider, entries());
}
const signers = () => [...new Set(s3.requests.map((r) => r.accessKeyId))];

describe("the dynamic providers' AWS access", () => {
  it("writes the shared objects and the credential files with the stack's aws:profile, its account checked, not with the machine's default profile", async () => {
    for (const provider of [sharedObjectProvider, scriptFilesProvider, scriptsReleaseProvider])
      await provider.configure!(stackConfig(QA));
    const files = await installScriptFiles();
    expect(
      JSON.parse(
        s3.buckets
          .get(BUCKET)!
          .get(SCRIPTS + "tenant_credentials.txt")!
          .body.toString("utf8"),
      ),
    ).toEqual({ [TENANT]: "Y3JlZA===" });
    expect(s3.requests.length).toBeGreaterThan(4);
    expect(signers()).toEqual([KEYS["acme-qa"]]);
    expect(sts.calls.map((c) => `${c.action} ${c.accessKeyId}`)).toContain(`GetCallerIdentity ${KEYS["acme-qa"]}`);
    // Nothing of the access is in the state: a later delete or read uses the stack config of its own time.
    expect(JSON.stringify(files.state)).not.toMatch(/acme-qa|AKIA|allowedAccountIds/);
  });

  it("refuses credentials of an account that aws:allowedAccountIds does not list (or that aws:forbiddenAccountIds does), reading and writing nothing", async () => {
    // No aws:profile: the SDK's chain finds the machine's default profile, of account 999999999999.
    await sharedObjectProvider.configure!(
      stackConfig({ "aws:region": "us-east-1", "aws:allowedAccountIds": ["111111111111"] }),
    );
    const error = await createResource(sharedObjectProvider, shared(SCRIPTS, "")).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /the AWS credentials \(the AWS SDK's default credentials\) are of account 999999999999, not in aws:allowedAccountIds \(111111111111\): nothing was read or written with them/,
    );
    await sharedObjectProvider.configure!(
      stackConfig({ ...QA, "aws:allowedAccountIds": undefined, "aws:forbiddenAccountIds": ["111111111111"] }),
    );
    const forbidden = await createResource(sharedObjectProvider, shared(SCRIPTS, "")).catch((e: Error) => e);
    expect((forbidden as Error).message).toMatch(
      /\(aws:profile acme-qa\) are of account 111111111111, in aws:forbiddenAccountIds/,
    );
    expect(s3.requests).toEqual([]);
  });

  it("assumes each role of aws:assumeRoles in turn from the profile's credentials, and checks the account of the last", async () => {
    const roles = [
      { roleArn: "arn:aws:iam::111111111111:role/hub-export-jump" },
      { roleArn: "arn:aws:iam::222222222222:role/hub-export-deployer", sessionName: "ci", duration: "15m" },
    ];
    await sharedObjectProvider.configure!(
      stackConfig({ ...QA, "aws:assumeRoles": roles, "aws:allowedAccountIds": ["222222222222"] }),
    );
    await createResource(sharedObjectProvider, shared(SCRIPTS, ""));
    const [jump, deployer] = sts.calls.filter((c) => c.action === "AssumeRole");
    expect(jump).toMatchObject({ accessKeyId: KEYS["acme-qa"], roleArn: roles[0].roleArn });
    expect(deployer).toMatchObject({ accessKeyId: expect.stringMatching(/^ASIA/), roleArn: roles[1].roleArn });
    const assumed = [...sts.accounts].find(
      ([key, account]) => key.startsWith("ASIA") && account === "222222222222",
    )![0];
    expect(sts.calls.find((c) => c.action === "GetCallerIdentity")!.accessKeyId).toBe(assumed);
    expect(signers()).toEqual([assumed]);
  });

  it("uses the stack's own keys (aws:accessKey, aws:secretKey) over any profile", async () => {
    await scriptFilesProvider.configure!(
      stackConfig({ ...QA, "aws:accessKey": "AKIASTACKKEYS0000000", "aws:secretKey": "secret" }),
    );
    await sharedObjectProvider.configure!(
      stackConfig({ ...QA, "aws:accessKey": "AKIASTACKKEYS0000000", "aws:secretKey": "secret" }),
    );
    await installScriptFiles();
    expect(signers()).toEqual(["AKIASTACKKEYS0000000"]);
  });

  it("deletes and refreshes with the profile its provider is configured with: the resources' state holds none", async () => {
    const first = stackConfig(QA);
    await scriptFilesProvider.configure!(first);
    await sharedObjectProvider.configure!(first);
    const files = await installScriptFiles();
    // The team retires its profile for a new one and sets it in the stack config.
    const now = stackConfig({ ...QA, "aws:profile": "acme-qa-2026" });
    const retired = stackConfig({ ...QA, "aws:profile": "acme-qa-retired" });
    // A plain `pulumi refresh` or `destroy` configures the provider with the last up's aws: config: the retired
    // profile, which no longer exists. The failure says which config that was and what to run.
    await scriptFilesProvider.configure!(dynamicProviderConfig("refresh", retired, now));
    await expect(refreshResource(scriptFilesProvider, files)).rejects.toThrow(
      /no AWS credentials for the stack \(aws:profile acme-qa-retired\): .*the last up's in `pulumi destroy` and `pulumi refresh`\. After changing it, run `pulumi up` first, or `pulumi refresh --run-program` \/ `pulumi destroy --run-program` \(Pulumi CLI 3\.231 or later\)$/,
    );
    // With `--run-program` (or after an `up`), the new profile; the state never named one.
    s3.requests.length = 0;
    await scriptFilesProvider.configure!(dynamicProviderConfig("refresh --run-program", retired, now));
    expect(await refreshResource(scriptFilesProvider, files)).toBeDefined();
    await scriptFilesProvider.configure!(dynamicProviderConfig("destroy --run-program", retired, now));
    await deleteResource(scriptFilesProvider, files);
    expect(
      JSON.parse(
        s3.buckets
          .get(BUCKET)!
          .get(SCRIPTS + "tenant_credentials.txt")!
          .body.toString("utf8"),
      ),
    ).toEqual({});
    expect(signers()).toEqual([KEYS["acme-qa-2026"]]);
  });

  it("reads aws: keys as the engine hands them over: account ids as numbers or text, lists as JSON", () => {
    expect(
      awsAccessFromConfig(
        (key) =>
          ({
            "aws:allowedAccountIds": '[111111111111,"012345678901"]',
            "aws:profile": "acme-qa",
            "aws:assumeRoles": '[{"roleArn":""}]',
          })[key],
      ),
    ).toEqual({
      profile: "acme-qa",
      assumeRoles: [],
      allowedAccountIds: ["111111111111", "012345678901"],
      forbiddenAccountIds: [],
    });
  });
});

describe("the adopted bucket's guard", () => {
  /** The guard's check inside a program run with this stack config: the foreign keys, or the error. */
  const guard = async (config: Record<string, unknown>): Promise<string[] | Error> => {
    let result: string[] | Error = [];
    await runProgramUnderMocks({
      stack: "qa",
      config: engineForm(config),
      program: async () => {
        result = await foreignObjects(
          s3ObjectInspector(),
          BUCKET,
          "us-east-1",
          ["pipelines/hub_hrsys_export/JOB.Json"],
          "hub-export/qa",
        ).catch((e: Error) => e);
        return {};
      },
    });
    return result;
  };

  it("looks at the bucket with the stack's aws:profile", async () => {
    expect(await guard(QA)).toEqual([]);
    expect(s3.requests.map((r) => `${r.method} ${r.accessKeyId}`)).toEqual([`HEAD ${KEYS["acme-qa"]}`]);
  });

  it("resolves the stack's credentials once for every check of one inspector (one AssumeRole, one GetCallerIdentity)", async () => {
    const config = { ...QA, "aws:assumeRoles": [{ roleArn: "arn:aws:iam::111111111111:role/hub-export-deployer" }] };
    await runProgramUnderMocks({
      stack: "qa",
      config: engineForm(config),
      program: async () => {
        const inspector = s3ObjectInspector();
        for (const key of ["pipelines/hub_hrsys_export/JOB.Json", "hub-configuration/JOB/checklist.md"])
          expect(await foreignObjects(inspector, BUCKET, "us-east-1", [key], "hub-export/qa")).toEqual([]);
        return {};
      },
    });
    expect(sts.calls.map((c) => c.action)).toEqual(["AssumeRole", "GetCallerIdentity"]);
    expect(s3.requests).toHaveLength(2);
  });

  it("stops on credentials of another account before any request, naming aws:allowedAccountIds", async () => {
    const error = (await guard({ ...QA, "aws:profile": undefined })) as Error;
    expect(pulumi.RunError.isInstance(error)).toBe(true);
    expect(error.message).toBe(
      "cannot check s3://acme-platform-qa/ before writing to it: the AWS credentials (the AWS SDK's default credentials) are of account 999999999999, not in aws:allowedAccountIds (111111111111): nothing was read or written with them",
    );
    expect(s3.requests).toEqual([]);
  });
});
