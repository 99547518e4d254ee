/**
 * Hostile stack values: each is refused before anything is declared, with one line naming its key, by validation,
 * `hub-export validate` and `hub-export plan` alike (exit 1, never the internal error's 70).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { ConfigError, validateStackConfig } from "../../config/validate";
import { fixtureStackFile } from "../fixtures/stacks";
import { rawConfig } from "../support/rawConfig";
import { PROJECT_ROOT, runMain } from "../support/cli";

type Raw = ReturnType<typeof rawConfig>;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-hostile-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const HUGE = "x".repeat(100_000);

/** [what, the key its one line names, edit] */
const HOSTILE: [string, string, (c: Raw) => void][] = [
  ["NUL in codebase", "platTenants[0].codebase", (c) => (c.platTenants[0].codebase = "US\u0000")],
  ["escape sequence in gblOrUs", "platTenants[0].gblOrUs", (c) => (c.platTenants[0].gblOrUs = "\u001b[2JUS")],
  [
    "right-to-left override in secureViewSource",
    "platTenants[0].secureViewSource",
    (c) => (c.platTenants[0].secureViewSource = "view\u202Etxt.exe"),
  ],
  ["100 kB connectorId", "platTenants[1].connectorId", (c) => (c.platTenants[1].connectorId = HUGE)],
  [
    "connectorId longer than its column",
    "platTenants[1].connectorId",
    (c) => (c.platTenants[1].connectorId = "c".repeat(257)),
  ],
  ["codebase longer than its column", "platTenants[0].codebase", (c) => (c.platTenants[0].codebase = "U".repeat(65))],
  [
    "NUL in a default (EmpTypeDefault)",
    "parameters.EmpTypeDefault",
    (c) => (c.parameters = { EmpTypeDefault: "Sa\u0000les" }),
  ],
  [
    "newline in EmpGenderDefault",
    "parameters.EmpGenderDefault",
    (c) => (c.parameters = { EmpGenderDefault: "Not\nDeclared" }),
  ],
  [
    "NUL in a hub environmentName",
    "hub.regions.US.environmentName",
    (c) => (c.hub.regions.US.environmentName = "hub-qa\u0000"),
  ],
  ["bell in a queue description", "queues.EU.description", (c) => (c.queues.EU.description = "EU\u0007")],
  ["lone surrogate in clientId", "hubTenants[0].clientId", (c) => (c.hubTenants[0].clientId = "acme\uD800")],
  ["whitespace in clientId", "hubTenants[0].clientId", (c) => (c.hubTenants[0].clientId = "acme us")],
  ["newline in clientAccessId", "queues.US.clientAccessId", (c) => (c.queues.US.clientAccessId = "id\nX-Injected: 1")],
  [
    "NUL in a secret (its value never printed)",
    "database.admin.password",
    (c) => (c.database.admin.password = "pw\u0000"),
  ],
  ["100 kB secret", "hubTenants[1].clientSecret", (c) => (c.hubTenants[1].clientSecret = HUGE)],
  ["queueName '..' (one level up in the publish URL)", "queues.US.queueName", (c) => (c.queues.US.queueName = "..")],
  ["queueName '.'", "queues.US.queueName", (c) => (c.queues.US.queueName = ".")],
  ["jobName '..' (an S3 key)", "jobName", (c) => (c.jobName = "..")],
  [
    "a connection name with '..' (a secret's name)",
    "queues.US.connectionName",
    (c) => (c.queues.US.connectionName = "HUB..MQ"),
  ],
  [
    "connectionStore.prefix climbing with '..'",
    "connectionStore.prefix",
    (c) => (c.connectionStore.prefix = "acme/../other"),
  ],
  [
    "connectionStore.prefix with an empty part",
    "connectionStore.prefix",
    (c) => (c.connectionStore.prefix = "acme//qa"),
  ],
  ["a bucket name with '..'", "bucket.name", (c) => (c.bucket.name = "acme..qa")],
  ["a bucket name that is an IP address", "bucket.name", (c) => (c.bucket.name = "192.168.1.10")],
  [
    "a hubContract path pointing ERS at the cfg API",
    "hubContract.ers.path",
    (c) => (c.hubContract = { ers: { path: "../../cfg/api/routingRules?tenantId={tenantId}" } }),
  ],
  [
    "a hubContract path with encoded dots",
    "hubContract.intakeReport.path",
    (c) => (c.hubContract = { intakeReport: { path: "%2e%2e/cfg/api/x" } }),
  ],
  ["a hubContract path with //", "hubContract.ers.path", (c) => (c.hubContract = { ers: { path: "entities//x" } })],
  [
    "scriptsRelease.zip at an absolute path",
    "scriptsRelease.zip",
    (c) => (c.scriptsRelease = { zip: "/etc/hub_python_scripts.zip" }),
  ],
  [
    "scriptsRelease.zip out of the project",
    "scriptsRelease.zip",
    (c) => (c.scriptsRelease = { zip: "../../hub_python_scripts.zip" }),
  ],
  [
    "database.caBundle out of the project",
    "database.caBundle",
    (c) => (c.database.caBundle = "../../../etc/ssl/certs/ca-certificates.crt"),
  ],
  ["cls.exports at /etc", "cls.exports", (c) => (c.cls = { exports: "/etc" })],
  ["cls.exports with a backslash", "cls.exports", (c) => (c.cls = { exports: "cls\\..\\..\\etc" })],
  ["a subnet id with a newline", "network.subnetIds[0]", (c) => (c.network.subnetIds = ["subnet-0123\nsubnet-0456"])],
  ["an alert address with NUL", "alerts.email[0]", (c) => (c.alerts = { email: ["ops@acme.example.com\u0000"] })],
  ["a KMS key that is not an ARN", "bucket.kmsKeyArn", (c) => (c.bucket.kmsKeyArn = "arn:\u0000")],
  [
    "a cluster ARN of another service",
    "task.clusterArn",
    (c) => (c.task = { clusterArn: "arn:aws:iam::123456789012:role/x" }),
  ],
  ["a schedule expression of 100 kB", "schedule.expression", (c) => (c.schedule.expression = `cron(${HUGE})`)],
  ["an unknown key holding NUL", "tennants", (c) => (c.tennants = "\u0000")],
  // Credentials in a URL would be stored in clear (the definition, HUB_API_CONFIG, connection records) and printed.
  [
    "a hub API URL carrying user:password@",
    "hub.regions.US.apis.ERS",
    (c) => (c.hub.regions.US.apis.ERS = "https://acme:pw-Zx9@hub-ext-qa.example.com/ers/api/"),
  ],
  [
    "hub.default's API URL carrying a user",
    "hub.default.apis.CFG",
    (c) => (c.hub.default = { apis: { CFG: "https://pw-Zx9@hub-ext-qa.example.com/cfg/api/" } }),
  ],
  [
    "a hub API URL with credentials and no /api/",
    "hub.regions.EU.apis.HRSYS",
    (c) => (c.hub.regions.EU.apis.HRSYS = "https://acme:pw-Zx9@hub-ext-qa.example.com/hrsys/"),
  ],
  [
    "a queue base URL carrying user:password@",
    "queues.EU.baseUrl",
    (c) => (c.queues.EU.baseUrl = "https://mq:pw-Zx9@mq-eu.example.com"),
  ],
  [
    "a database host carrying user:password@",
    "database.host",
    (c) => (c.database.host = "admin:pw-Zx9@db.example.com"),
  ],
  [
    "a provisioning host carrying user:password@",
    "database.provisioning.host",
    (c) => (c.database.provisioning = { host: "admin:pw-Zx9@bastion.example.com" }),
  ],
];

describe("hostile stack values", () => {
  it.each(HOSTILE)("%s: refused with one line naming hubExport:%s", (_what, key, edit) => {
    const raw = rawConfig();
    edit(raw);
    let error: ConfigError | undefined;
    try {
      validateStackConfig(raw, { source: "test", stack: "dev" });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = error!.lines.slice(1);
    expect(lines, lines.join("\n")).toHaveLength(1);
    expect(lines[0].startsWith(`hubExport:${key}: `), lines[0]).toBe(true);
    // Short, printable and without the value: a line of the terminal, never the 100 kB or a secret.
    expect(lines[0].length).toBeLessThan(300);
    expect(lines[0]).not.toMatch(/[\u0000-\u001f\u202e]|xxxxxxxxxx|pw/);
  });

  it("accepts the ordinary values next to them (the table's edits are what is refused)", () => {
    expect(() => validateStackConfig(rawConfig(), { source: "test", stack: "dev" })).not.toThrow();
  });
});

describe("validate and plan agree on a stack file's bad values, and exit 1", () => {
  /** The qa fixture with `edit` applied, written under this test's folder (inside the project). */
  function stackFile(name: string, edit: (config: Record<string, any>) => void): string {
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8")) as { config: Record<string, any> };
    edit(doc.config);
    const file = path.join(dir, name, "Pulumi.qa.yaml");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
  }

  async function both(file: string) {
    const [validate, plan] = await Promise.all([
      runMain(["validate", "--file", file]),
      runMain(["plan", "--file", file]),
    ]);
    return { validate, plan };
  }

  it("a cls.exports folder that is not there", async () => {
    const missing = path.relative(PROJECT_ROOT, path.join(dir, "no-such-exports"));
    const { validate, plan } = await both(
      stackFile("missing-exports", (c) => (c["hubExport:cls"] = { exports: missing })),
    );
    expect([validate.code, plan.code]).toEqual([1, 1]);
    expect(validate.stderr).toContain("cannot read the folder of exports (ENOENT)");
    expect(plan.stderr).toContain("cannot read the folder of exports (ENOENT)");
    expect(plan.stderr).not.toMatch(/internal error| {4}at /);
  });

  it("a cls.exports folder that leads out of the project through a symbolic link", async () => {
    const link = path.join(dir, "exports-link");
    fs.symlinkSync("/etc", link);
    const { validate, plan } = await both(
      stackFile("linked-exports", (c) => (c["hubExport:cls"] = { exports: path.relative(PROJECT_ROOT, link) })),
    );
    expect([validate.code, plan.code]).toEqual([1, 1]);
    const line = `hubExport:cls.exports: ${path.relative(PROJECT_ROOT, link)} leads out of the project folder (to /etc): keep it inside the project`;
    expect(validate.stderr).toContain(line);
    expect(plan.stderr).toContain(line);
  });

  it("a NUL in a value of the stack file", async () => {
    const { validate, plan } = await both(
      stackFile("nul", (c) => (c["hubExport:platTenants"][0].codebase = "US\u0000")),
    );
    expect([validate.code, plan.code]).toEqual([1, 1]);
    const line =
      "hubExport:platTenants[0].codebase: must not contain control or bidirectional-override characters (found U+0000)";
    expect(validate.stderr).toContain(line);
    expect(plan.stderr).toContain(line);
  });
});

describe("credentials in a URL of a stack file (before the host, or in its query string)", () => {
  /** The test's raw config as a stack file (secrets left unset, as a fresh file has them), with `edit` applied. */
  function stackFile(name: string, edit: (c: Raw) => void): string {
    const raw = rawConfig();
    delete raw.database.admin.password;
    delete raw.database.task.password;
    for (const q of Object.values<{ clientSecret?: string }>(raw.queues)) delete q.clientSecret;
    for (const t of raw.hubTenants as { clientSecret?: string }[]) delete t.clientSecret;
    edit(raw);
    const file = path.join(dir, name, "Pulumi.qa.yaml");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      YAML.stringify({ config: Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hubExport:${k}`, v])) }),
    );
    return file;
  }

  it.each([
    [
      "a hub API URL with user:password@",
      "hub.regions.US.apis.ERS",
      (c: Raw) => (c.hub.regions.US.apis.ERS = "https://acme:Pw-Zx9-hub@hub-ext-qa.example.com/ers/api/"),
    ],
    [
      "a queue base URL with user:password@",
      "queues.EU.baseUrl",
      (c: Raw) => (c.queues.EU.baseUrl = "https://mq:Pw-Zx9-hub@mq-eu.example.com"),
    ],
    [
      "the database host with user:password@",
      "database.host",
      (c: Raw) => (c.database.host = "admin:Pw-Zx9-hub@db.example.com"),
    ],
    [
      "a hub API URL with a secret in its query string",
      "hub.regions.EU.apis.HRSYS",
      (c: Raw) => (c.hub.regions.EU.apis.HRSYS = "https://hub-ext-qa.example.com/hrsys/api/?client_secret=Pw-Zx9-hub"),
    ],
    [
      "a queue base URL with a token in its query string",
      "queues.US.baseUrl",
      (c: Raw) => (c.queues.US.baseUrl = "https://mq-us.example.com?access_token=Pw-Zx9-hub"),
    ],
  ])(
    "%s: validate, render and plan refuse it (exit 1) with one line naming hubExport:%s, never the password",
    async (_what, key, edit) => {
      const file = stackFile(key, edit);
      const results = await Promise.all(
        ["validate", "render", "plan"].map((command) => runMain([command, "--file", file])),
      );
      for (const r of results) {
        expect(r.code, r.stdout + r.stderr).toBe(1);
        expect(r.stderr.split("\n").filter((l) => l.startsWith("hubExport:"))).toEqual([
          expect.stringMatching(
            new RegExp(
              `^hubExport:${key.replace(/[.[\]]/g, "\\$&")}: must (.*without credentials|not carry credentials|not carry a secret in its query string)`,
            ),
          ),
        ]);
        expect(r.stdout + r.stderr).not.toContain("Pw-Zx9-hub");
      }
    },
  );
});
