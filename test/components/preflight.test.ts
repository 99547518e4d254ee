/**
 * A real `pulumi preview` or `pulumi up` on a stack file as committed (the tests' fixtures, copies of the repository's)
 * stops before registering anything and lists every secret not set and every placeholder left, one line each, with the
 * exact command that fixes it. Once a team has set them all, the same program runs. The offline plan uses stand-ins
 * instead; the repository's own stack files, whatever a team has put in them, validate and plan.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { engineConfigFromStackFile, runProgramUnderMocks } from "../../components/planner";
import { hubExportProgram } from "../../components/program";
import { availableStacks, PROJECT_ROOT, stackFilePath } from "../../config/load";
import { PLACEHOLDER_PREFIX } from "../../config/placeholders";
import { runMain } from "../support/cli";
import { offlineObjectInspector } from "../../components/storage/objectGuard";
import { fixtureStackFile } from "../fixtures/stacks";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-preflight-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * The real program (no offline stand-ins), as `pulumi up` runs it; resolves to its error or its resources. Only the
 * adopted bucket's guard looks at the mocks' bucket instead of S3 (it would call AWS).
 */
async function realRun(stack: string, config: Record<string, string>) {
  const registered: string[] = [];
  const run = await runProgramUnderMocks({
    stack,
    config,
    program: () => hubExportProgram({ taskSourceHash: "ab".repeat(32), objectInspector: offlineObjectInspector() }),
  }).then(
    (r) => {
      registered.push(...r.resources.map((x) => x.type));
      return undefined;
    },
    (e: unknown) => e as Error,
  );
  return { error: run, registered };
}

/** The fixture as a team has it after following the preflight's commands. */
function readyConfig(stack: "qa" | "prod"): Record<string, string> {
  const { config } = engineConfigFromStackFile(fixtureStackFile(stack));
  const ready: Record<string, string> = {};
  // A path in the project, as the config takes it: this test's folder is in the project's .tmp.
  const caBundle = path.relative(PROJECT_ROOT, path.join(dir, "ca.pem"));
  fs.writeFileSync(
    path.join(PROJECT_ROOT, caBundle),
    "-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n",
  );
  for (const [key, text] of Object.entries(config)) {
    const value = /^\s*[[{]/.test(text) ? JSON.parse(text) : text;
    const strip = (v: unknown): unknown =>
      typeof v === "string" && v.startsWith(PLACEHOLDER_PREFIX)
        ? v.slice(PLACEHOLDER_PREFIX.length)
        : Array.isArray(v)
          ? v.map(strip)
          : v && typeof v === "object"
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strip(x)]))
            : v;
    ready[key] = typeof value === "string" ? (strip(value) as string) : JSON.stringify(strip(value));
  }
  const db = JSON.parse(ready["hubExport:database"]);
  ready["hubExport:database"] = JSON.stringify({
    ...db,
    caBundle,
    admin: { ...db.admin, password: "admin-Pw1" },
    task: { ...db.task, password: "task-Pw1" },
  });
  const queues = JSON.parse(ready["hubExport:queues"]);
  for (const q of Object.values<Record<string, unknown>>(queues)) q.clientSecret = "queue-Pw1";
  ready["hubExport:queues"] = JSON.stringify(queues);
  ready["hubExport:hubTenants"] = JSON.stringify(
    JSON.parse(ready["hubExport:hubTenants"]).map((t: object) => ({ ...t, clientSecret: "tenant-Pw1" })),
  );
  return ready;
}

describe("the preflight of a real preview or up", () => {
  it("stops on the qa file as committed, nothing registered, one line with its command per value to set", async () => {
    const { config } = engineConfigFromStackFile(fixtureStackFile("qa"));
    const { error, registered } = await realRun("qa", config);
    expect(registered).toEqual([]);
    expect(pulumi.RunError.isInstance(error)).toBe(true);
    const [head, ...lines] = error!.message.split("\n");
    expect(head).toBe(`stack 'qa' is not ready: ${lines.length} values to set first (nothing was registered)`);
    expect(lines).toEqual(
      expect.arrayContaining([
        "  hubExport:database.admin.password: secret not set: pulumi config set --stack qa --secret --path 'hubExport:database.admin.password'",
        "  hubExport:database.task.password: secret not set: pulumi config set --stack qa --secret --path 'hubExport:database.task.password'",
        "  hubExport:queues.EU.clientSecret: secret not set: pulumi config set --stack qa --secret --path 'hubExport:queues.EU.clientSecret'",
        "  hubExport:hubTenants[1].clientSecret: secret not set: pulumi config set --stack qa --secret --path 'hubExport:hubTenants[1].clientSecret'",
        "  hubExport:database.host: placeholder (example: platdb-qa.cluster-c8x2kq1v0abc.us-east-1.rds.amazonaws.com): pulumi config set --stack qa --path 'hubExport:database.host' <value>",
        "  hubExport:network.subnetIds[1]: placeholder (example: subnet-0f1e2d3c4b5a69788): pulumi config set --stack qa --path 'hubExport:network.subnetIds[1]' <value>",
        "  hubExport:hubTenants[0].hubTenantId: placeholder (example: 3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c): pulumi config set --stack qa --path 'hubExport:hubTenants[0].hubTenantId' <value>",
        "  hubExport:database.caBundle: file certs/rds-global-bundle.pem not found: download the CA bundle of the database's server to certs/rds-global-bundle.pem (for RDS: https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem)",
        "  aws:allowedAccountIds[0]: placeholder (example: 111111111111): pulumi config set --stack qa --path 'aws:allowedAccountIds[0]' <12-digit account id>",
      ]),
    );
    // Every secret and every placeholder of the file (the account's included), no more, and the missing CA bundle.
    const placeholders = (fs.readFileSync(fixtureStackFile("qa"), "utf8").match(/^[^#\n]*[:-] PLACEHOLDER:/gm) ?? [])
      .length;
    expect(placeholders).toBeGreaterThan(20);
    expect(lines.filter((l) => l.includes("secret not set"))).toHaveLength(6);
    expect(lines.filter((l) => l.includes(": placeholder ("))).toHaveLength(placeholders);
    expect(lines).toHaveLength(6 + placeholders + 1);
  });

  it("runs once every value is set, and stops again on an unpinned or malformed account", async () => {
    const ready = readyConfig("prod");
    expect((await realRun("prod", { ...ready, "aws:allowedAccountIds": '["210987654321"]' })).registered).toContain(
      "hubExport:index:HubExport",
    );

    const { error: unpinned } = await realRun(
      "prod",
      Object.fromEntries(Object.entries(ready).filter(([k]) => k !== "aws:allowedAccountIds")),
    );
    expect(unpinned!.message.split("\n")).toEqual([
      "stack 'prod' is not ready: 1 value to set first (nothing was registered)",
      "  aws:allowedAccountIds: not set: each stack pins the AWS account it deploys to: pulumi config set --stack prod --path 'aws:allowedAccountIds[0]' <12-digit account id>",
    ]);
    const { error: malformed } = await realRun("prod", { ...ready, "aws:allowedAccountIds": '["2109876543"]' });
    expect(malformed!.message).toContain("aws:allowedAccountIds[0]: must be a 12-digit AWS account id");
    // A key set without the namespace lands in the project's (hub-export:), where the program would never read it.
    const { error: misplaced } = await realRun("prod", {
      ...ready,
      "aws:allowedAccountIds": '["210987654321"]',
      "hub-export:schedule": '{"enabled":false}',
    });
    expect(misplaced!.message.split("\n")[1]).toBe(
      "  hub-export:schedule: not read: the program's keys are in namespace hubExport: pulumi config rm --stack prod 'hub-export:schedule' and set 'hubExport:schedule' instead",
    );
  });

  it("names a key in the wrong namespace with the config's problems, when a value is missing too", async () => {
    const { "hubExport:clientName": clientName, ...ready } = readyConfig("qa");
    const { error, registered } = await realRun("qa", {
      ...ready,
      "aws:allowedAccountIds": '["111111111111"]',
      "hub-export:clientName": clientName,
    });
    expect(registered).toEqual([]);
    expect(error!.message.split("\n")).toEqual([
      "stack 'qa': invalid configuration (2 problems)",
      "hubExport:clientName: is required",
      "hub-export:clientName: not read: the program's keys are in namespace hubExport: pulumi config rm --stack qa 'hub-export:clientName' and set 'hubExport:clientName' instead",
    ]);
  });

  it("refuses a stack whose hubExport:environment is not the stack it runs in", async () => {
    const ready = readyConfig("qa");
    const { error, registered } = await realRun("prod", { ...ready, "aws:allowedAccountIds": '["111111111111"]' });
    expect(registered).toEqual([]);
    expect(error!.message).toMatch(/^stack 'prod': invalid configuration/);
    expect(error!.message).toContain(
      "hubExport:environment: is 'QA', but the stack is 'prod': a stack deploys only its own environment",
    );
    expect((await realRun("acme-qa", { ...ready, "aws:allowedAccountIds": '["111111111111"]' })).registered).toContain(
      "hubExport:index:HubExport",
    );
  });

  it("lets the offline plan and validate work on the repository's stack files, whatever a team has set in them", async () => {
    for (const stack of availableStacks()) {
      const offline = await runProgramUnderMocks({
        stack,
        config: engineConfigFromStackFile(stackFilePath(stack)).config,
        program: () => hubExportProgram({ offline: true, taskSourceHash: "ab".repeat(32) }),
      });
      expect(offline.resources.some((r) => r.type === "aws:scheduler/schedule:Schedule")).toBe(true);
      const validate = await runMain(["validate", "--stack", stack]);
      expect(validate.code, validate.stderr).toBe(0);
      expect(validate.stdout).toMatch(new RegExp(`^ok: stack ${stack}: `));
    }
  });

  it("validate lists the values to set of a file as committed", async () => {
    const validate = await runMain(["validate", "--file", fixtureStackFile("qa")]);
    expect(validate.code).toBe(0);
    expect(validate.stdout).toContain(`ok: ${fixtureStackFile("qa")}: client ACME`);
    expect(validate.stdout).toContain(
      "  hubExport:database.admin.password: secret not set: pulumi config set --stack qa --secret --path 'hubExport:database.admin.password'\n",
    );
    expect(validate.stdout).toContain("  aws:allowedAccountIds[0]: placeholder (example: 111111111111)");
  });

  it("validate lists exactly what the preflight stops on, in one list: a key in the wrong namespace and a missing CA bundle too", async () => {
    const file = path.join(dir, "Pulumi.qa.yaml");
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8")) as { config: Record<string, unknown> };
    doc.config["hub-export:clientName"] = "ACME";
    doc.config["hubExport:database"] = {
      ...(doc.config["hubExport:database"] as object),
      caBundle: "certs/not-downloaded.pem",
    };
    fs.writeFileSync(file, YAML.stringify(doc));
    const validate = await runMain(["validate", "--file", file]);
    expect(validate.code).toBe(0);
    // validate groups them by who supplies each (config/suppliers.ts); the preflight lists them in one run.
    const listed = validate.stdout
      .split("\n")
      .filter((l) => l.startsWith("    "))
      .map((l) => l.slice(2));
    const { error } = await realRun("qa", engineConfigFromStackFile(file).config);
    expect([...listed].sort()).toEqual(error!.message.split("\n").slice(1).sort());
    expect(listed).toContain(
      "  hub-export:clientName: not read: the program's keys are in namespace hubExport: pulumi config rm --stack qa 'hub-export:clientName' and set 'hubExport:clientName' instead",
    );
    expect(listed).toContain(
      "  hubExport:database.caBundle: file certs/not-downloaded.pem not found: download the CA bundle of the database's server to certs/not-downloaded.pem (for RDS: https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem)",
    );
  });

  it("the fixtures, as the stack files are committed, hold no encryptionsalt and no secure: value, and pin each stack's account", () => {
    for (const stack of ["qa", "prod"] as const) {
      const text = fs.readFileSync(fixtureStackFile(stack), "utf8");
      expect(text).not.toMatch(/encryptionsalt|secure:/);
      const doc = YAML.parse(text) as { config: Record<string, unknown> };
      expect(doc.config["aws:allowedAccountIds"]).toEqual([expect.stringMatching(/^PLACEHOLDER:\d{12}$/)]);
    }
  });
});
