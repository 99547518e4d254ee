/**
 * Secrets stay secret: every secret the procedure needs reaches Pulumi as a secret Output, the engine receives them
 * tagged secret, and neither the stack outputs nor `hub-export plan --json` print one.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it } from "vitest";
import { configFromEngine } from "../../config/load";
import { withOfflineSecrets } from "../../config/placeholders";
import type { StackConfig } from "../../config/schema";
import { installationOf } from "../../core/installation";
import { encodeCredentialsString } from "../../core/credentials";
import { serializeConnectionRecord } from "../../core/connections";
import { scriptFileEntries } from "../../core/credentialFiles";
import { loadPipelineTemplate, loadSqlSources } from "../../templates";
import { secretInputs } from "../../components/hubExport";
import { engineConfigFromStackFile, planStackFile, runProgramUnderMocks } from "../../components/planner";
import { planJson } from "../../components/planner/format";
import indexProgram from "../../index";
import { containsSecret, isSecretValue, maskValue } from "../../components/planner/values";
import { editKey, fixtureStack, fixtureStackFile } from "../fixtures/stacks";
import { planOf } from "../fixtures/plan";

const execFileAsync = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");

/** Every plain secret value of a stack and what is derived from it (credentials strings, stored records, files). */
function secretTexts(config: StackConfig): string[] {
  const installation = installationOf(config, { template: loadPipelineTemplate(), ...loadSqlSources() });
  return [
    config.database.admin.password.reveal(),
    config.database.task.password.reveal(),
    ...Object.values(config.queues).map((q) => q.clientSecret.reveal()),
    ...config.hubTenants.map((t) => t.clientSecret.reveal()),
    ...config.hubTenants.map((t) =>
      encodeCredentialsString({ clientId: t.clientId, clientSecret: t.clientSecret.reveal() }),
    ),
    ...installation.connections.filter((c) => c.password).map(serializeConnectionRecord),
    scriptFileEntries(config).tenantCredentials.reveal(),
  ];
}

describe("secrets", () => {
  const engine = fixtureStack("qa");
  // Distinct, recognizable secret values instead of placeholders.
  let config = engine.config;
  config = editKey<{ admin: { password: string }; task: { password: string } }>(config, "database", (db) => ({
    ...db,
    admin: { ...db.admin, password: "admin-pw-Zq81" },
    task: { ...db.task, password: "task-pw-Xr55" },
  }));
  const stackConfig = configFromEngine(config, "qa");

  it("are Pulumi secrets wherever the program hands them to a component", async () => {
    const installation = installationOf(stackConfig, { template: loadPipelineTemplate(), ...loadSqlSources() });
    const s = secretInputs(installation);
    const outputs: pulumi.Output<unknown>[] = [
      s.adminPassword,
      s.taskPassword,
      ...s.connectionRecords.map((r) => r.secretString),
      ...s.routingRules.map((r) => r.credentialsString),
      s.tenantCredentials,
    ];
    for (const output of outputs) expect(await pulumi.isSecret(output)).toBe(true);
    // Nothing else in the component arguments holds a secret in plain text.
    const plainParts = JSON.stringify({
      ...s,
      adminPassword: 0,
      taskPassword: 0,
      connectionRecords: s.connectionRecords.map((r) => ({ ...r, secretString: 0 })),
      routingRules: s.routingRules.map((r) => ({ ...r, credentialsString: 0 })),
      tenantCredentials: 0,
    });
    for (const text of secretTexts(stackConfig)) expect(plainParts).not.toContain(text);
  });

  it("reach the engine tagged secret and never appear untagged in any input, option or output", async () => {
    const run = await planOf(config);
    const secrets = secretTexts(stackConfig);
    const masked = JSON.stringify({
      resources: run.resources.map((r) => ({ ...r, inputs: maskValue(r.inputs), state: maskValue(r.state) })),
      outputs: maskValue(run.outputs),
    });
    for (const text of secrets) expect(masked).not.toContain(text);
    // The stack outputs hold no secret at all.
    expect(containsSecret(run.outputs)).toBe(false);
    // And the secret-holding inputs are tagged.
    const tagged = run.resources.flatMap((r) =>
      Object.entries(r.inputs)
        .filter(([, v]) => containsSecret(v))
        .map(([k]) => `${r.type}.${k}`),
    );
    expect(new Set(tagged)).toEqual(
      new Set([
        "pulumi:providers:postgresql.password",
        "postgresql:index/role:Role.password",
        "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet.credentialsString",
        "aws:secretsmanager/secretVersion:SecretVersion.secretString",
        "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries.entries",
        // The registry login of the image's push (the ECR token).
        "docker-build:index:Image.registries",
      ]),
    );
    // The SQL resources hold no login at all, only the database's label.
    for (const r of run.resources.filter((r) => /hubExport:(ConfigRow|SqlBaseline|ClientRunTables)$/.test(r.type))) {
      expect(r.inputs).not.toHaveProperty("connection");
      expect(r.inputs.target).toBe(
        `${stackConfig.database.host}:${stackConfig.database.port}/${stackConfig.database.database}`,
      );
      expect(r.options.additionalSecretOutputs).toBeUndefined();
    }
    const version = run.resources.find((r) => r.type === "aws:secretsmanager/secretVersion:SecretVersion")!;
    expect(isSecretValue(version.state!.secretString)).toBe(true);
  });

  it("are masked in the installation JSON of a stack file (offline stand-ins for the secrets not set)", async () => {
    const text = JSON.stringify(planJson(await planStackFile({ file: fixtureStackFile("qa") })));
    const installation = JSON.parse(text);
    expect(installation.resourceCount).toBe(installation.resources.length);
    expect(text).not.toContain("offline-stand-in");
    for (const secret of secretTexts(
      withOfflineSecrets(configFromEngine(engineConfigFromStackFile(fixtureStackFile("qa")).config, "qa")),
    ))
      expect(text).not.toContain(secret);
    expect(text).toContain('"[secret]"');
    expect(text).not.toContain("4dabf18193072939515e22adb298388d");
  });

  it("are masked in `hub-export plan --json` run as a plain node process, without the Pulumi CLI", async () => {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      [path.join(ROOT, "bin/hub-export.js"), "plan", "--file", fixtureStackFile("prod"), "--json"],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          PATH: path.dirname(process.execPath),
          PULUMI_ACCESS_TOKEN: "",
          AWS_ACCESS_KEY_ID: "",
          AWS_PROFILE: "",
        },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    expect(stderr).toBe("");
    const installation = JSON.parse(stdout);
    expect(installation.stack).toBe("prod");
    expect(installation.resources.some((r: { type: string }) => r.type === "aws:scheduler/schedule:Schedule")).toBe(
      true,
    );
    expect(stdout).not.toContain("offline-stand-in");
  });
});

describe("the program", () => {
  it("reports a config error as its message, without a stack trace", async () => {
    const bad = editKey<Record<string, unknown>>(fixtureStack("qa").config, "bucket", (b) => ({
      ...b,
      name: "Not A Bucket",
    }));
    const error = await runProgramUnderMocks({ stack: "qa", config: bad }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(pulumi.RunError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^stack 'qa': invalid configuration \(1 problem\)\nhubExport:bucket\.name: must be a valid S3 bucket name$/,
    );
  });

  it("is what index.ts exports for `pulumi up`: the real program, which stops on the committed files' placeholders", async () => {
    const program = indexProgram;
    expect(typeof program).toBe("function");
    const error = await runProgramUnderMocks({ stack: "qa", config: fixtureStack("qa").config, program }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(pulumi.RunError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^stack 'qa' is not ready: \d+ values? to set first \(nothing was registered\)\n/,
    );
  });

  it("runs twice in one process with the same result (isolated runtime state)", async () => {
    const first = await planOf(fixtureStack("qa").config);
    await planOf(fixtureStack("prod").config, "prod");
    const again = await planOf(fixtureStack("qa").config);
    const strip = (run: typeof first) => run.resources.map((r) => ({ ...r, state: undefined }));
    expect(strip(again)).toEqual(strip(first));
    expect(again.outputs).toEqual(first.outputs);
  });

  it("leaves no run's state to the next: a failed run's late resource, its config", async () => {
    class Thing extends pulumi.CustomResource {
      constructor(name: string) {
        super("test:index:Thing", name, {}, {});
      }
    }
    let startLate!: () => void;
    const lateStarts = new Promise<void>((resolve) => (startLate = resolve));
    let lateMade!: () => void;
    const made = new Promise<void>((resolve) => (lateMade = resolve));
    const failed = runProgramUnderMocks({
      stack: "test",
      config: { "test:key": "first" },
      program: () => {
        // Still at work once the next run began, as a failed program may be.
        void lateStarts.then(() => {
          new Thing("late");
          lateMade();
        });
        throw new pulumi.RunError("stop");
      },
    });
    await expect(failed).rejects.toThrow("stop");
    expect(pulumi.runtime.allConfig()).toEqual({});
    const next = await runProgramUnderMocks({
      stack: "test",
      config: {},
      program: async () => {
        new Thing("mine");
        startLate();
        await made;
        return {};
      },
    });
    expect(next.resources.map((r) => r.name)).toEqual(["hub-export-test", "mine"]);
  });
});
