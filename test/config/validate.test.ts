import { describe, expect, it } from "vitest";
import {
  validateStackConfig,
  inspectStackConfig,
  stackMatchesEnvironment,
  ConfigError,
  formatIssue,
} from "../../config/validate";
import { keyPathText } from "../../config/placeholders";
import { environmentIssues } from "../../config/environment";
import { loadStackConfig } from "../../config/load";
import { PARAMETER_DEFAULTS, TASK_PARAMETER_DEFAULTS } from "../../core/parameters";
import { rawConfig, rawHubTenant, rawPlatTenant, rawHubEnvironment, rawQueue, TENANT_IDS } from "../support/rawConfig";

type Raw = ReturnType<typeof rawConfig>;

/** The error lines for a config changed by `edit`. */
function problems(edit: (c: Raw) => void, stack = "dev", fromFile = false): string[] {
  const raw = rawConfig();
  edit(raw);
  try {
    validateStackConfig(raw, { source: "test", stack, fromFile });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).lines.slice(1);
  }
  return [];
}

describe("stack config validation", () => {
  it("accepts the valid fixture and applies the specification's parameter defaults", () => {
    const config = validateStackConfig(rawConfig(), { source: "test" });
    expect(config.parameters).toEqual({ ...PARAMETER_DEFAULTS, ...TASK_PARAMETER_DEFAULTS });
    expect(config.parameters).toEqual({
      records_per_hub_message: 1,
      records_per_ers_request: 100,
      idl_date: "1901-01-01T00:00:00",
      system_code: "HRSYS",
      EmpTypeDefault: "Sales",
      EmpGenderDefault: "Not_Declared",
      change_lag_seconds: 0,
      set_aside_after_runs: 3,
    });
    expect(config.platTenants[0].secureViewSource).toBeNull();
    expect(config.schedule.enabled).toBe(true);
  });

  const cases: [string, (c: Raw) => void, string][] = [
    ["client_name is uppercase", (c) => (c.clientName = "Acme"), "hubExport:clientName: must be uppercase"],
    [
      "client_name is a safe SQL identifier",
      (c) => (c.clientName = "ACME;DROP"),
      "hubExport:clientName: must be uppercase",
    ],
    [
      "tenant ids are UUIDs",
      (c) => (c.hubTenants[0].hubTenantId = "tenant-1"),
      "hubExport:hubTenants[0].hubTenantId: must be a UUID",
    ],
    [
      "regions are US, EU or APAC",
      (c) => (c.hubTenants[1].hubRegion = "LATAM"),
      "hubExport:hubTenants[1].hubRegion: must be one of US, EU, APAC",
    ],
    [
      "queue regions are US, EU or APAC",
      (c) => (c.queues.LATAM = rawQueue("US")),
      "hubExport:queues.LATAM: is not a known key",
    ],
    [
      "every region with a hub tenant has a queue connection",
      (c) => (
        c.hubTenants.push(rawHubTenant("APAC")),
        c.platTenants.push(rawPlatTenant("APAC")),
        (c.hub.regions.APAC = rawHubEnvironment("APAC"))
      ),
      "hubExport:hubTenants[2].hubRegion: region APAC has no queue connection",
    ],
    [
      "every region with a hub tenant has a hub environment",
      (c) => (
        c.hubTenants.push(rawHubTenant("APAC")),
        c.platTenants.push(rawPlatTenant("APAC")),
        (c.queues.APAC = rawQueue("APAC"))
      ),
      "hubExport:hub.regions.APAC: hub region APAC has hub tenants but no environmentName, apis.ERS, apis.CFG, apis.HRSYS (set it here or in hubExport:hub.default)",
    ],
    [
      "a region's environment is complete with hub.default's values",
      (c) => (delete c.hub.regions.EU.apis.CFG, (c.hub.default = { environmentName: "hub-qa" })),
      "hubExport:hub.regions.EU: hub region EU has hub tenants but no apis.CFG",
    ],
    [
      "hub regions are US, EU or APAC",
      (c) => (c.hub.regions.LATAM = rawHubEnvironment("US")),
      "hubExport:hub.regions.LATAM: is not a known key",
    ],
    [
      "platform tenants name a hub tenant",
      (c) => (c.platTenants[1].hubTenantCode = "ACME_APAC"),
      "hubExport:platTenants[1].hubTenantCode: names no hub tenant: 'ACME_APAC' is not a hubTenantCode of hubExport:hubTenants (ACME_US, ACME_EU)",
    ],
    [
      "every hub tenant is fed by a platform tenant",
      (c) => c.platTenants.pop(),
      "hubExport:hubTenants[1]: hub tenant ACME_EU is fed by no platform tenant",
    ],
    [
      "platform regions are unique (one HUB_PLAT_CONFIG row per client and region)",
      (c) => c.platTenants.push(rawPlatTenant("EU", { hubTenantCode: "ACME_US" })),
      "hubExport:platTenants[2].platRegion: duplicates platTenants[1].platRegion 'EU'",
    ],
    [
      "hub tenant codes are unique",
      (c) => c.hubTenants.push(rawHubTenant("US", { hubTenantId: TENANT_IDS.APAC })),
      "hubExport:hubTenants[2].hubTenantCode: duplicates hubTenants[0].hubTenantCode 'ACME_US'",
    ],
    [
      "the -ext- rule applies to hub.default's URLs too",
      (c) => (c.hub.default = { apis: { ERS: "https://hub-qa.example.com/ers/api/" } }),
      "hubExport:hub.default.apis.ERS: host 'hub-qa.example.com' must be the externally reachable form",
    ],
    [
      "the /api/ rule applies to hub.default's URLs too",
      (c) => (c.hub.default = { apis: { CFG: "https://hub-ext-qa.example.com/cfg/" } }),
      "hubExport:hub.default.apis.CFG: must end in /api/",
    ],
    [
      "no queue connection is unused",
      (c) => (c.queues.APAC = rawQueue("APAC")),
      "hubExport:queues.APAC: queue connection for region APAC is unused",
    ],
    [
      "queue connection names are unique",
      (c) => (c.queues.EU.connectionName = "HUB_MQ_US"),
      "hubExport:queues.EU.connectionName: connection name 'HUB_MQ_US' is already used by hubExport:queues.US.connectionName",
    ],
    [
      "connection names are unique across kinds",
      (c) => (c.database.connectionName = "PLAT_S3"),
      "hubExport:database.connectionName: connection name 'PLAT_S3' is already used by hubExport:bucket.connectionName",
    ],
    [
      "hub API URLs end in /api/",
      (c) => (c.hub.regions.US.apis.ERS = "https://hub-ext-qa.example.com/ers/"),
      "hubExport:hub.regions.US.apis.ERS: must end in /api/",
    ],
    [
      "hub API hosts have an -ext- segment",
      (c) => (c.hub.regions.EU.apis.CFG = "https://hub-qa.example.com/cfg/api/"),
      "hubExport:hub.regions.EU.apis.CFG: host 'hub-qa.example.com' must be the externally reachable form, with an -ext- segment",
    ],
    [
      "hub API URLs use https",
      (c) => (c.hub.regions.US.apis.HRSYS = "http://hub-ext-qa.example.com/hrsys/api/"),
      "hubExport:hub.regions.US.apis.HRSYS: must use https",
    ],
    [
      "loopback needs an explicit allowLoopback",
      (c) => (c.hub.regions.US.apis.ERS = "http://127.0.0.1:8080/ers/api/"),
      "hubExport:hub.regions.US.apis.ERS: points at loopback",
    ],
    [
      "queue base URLs at loopback need allowLoopback",
      (c) => (c.queues.US.baseUrl = "http://localhost:9000"),
      "hubExport:queues.US.baseUrl: points at loopback",
    ],
    // Every spelling of this machine is loopback: IPv4-mapped IPv6, a trailing dot, *.localhost, 0.0.0.0.
    [
      "IPv4-mapped IPv6 loopback is loopback",
      (c) => (c.hub.regions.US.apis.ERS = "https://[::ffff:127.0.0.1]/ers/api/"),
      "hubExport:hub.regions.US.apis.ERS: points at loopback",
    ],
    [
      "a trailing-dot localhost is loopback",
      (c) => (c.queues.US.baseUrl = "https://localhost.:9000"),
      "hubExport:queues.US.baseUrl: points at loopback",
    ],
    [
      "*.localhost is loopback",
      (c) => (c.hub.regions.EU.apis.CFG = "https://hub-ext-qa.localhost/cfg/api/"),
      "hubExport:hub.regions.EU.apis.CFG: points at loopback",
    ],
    [
      "0.0.0.0 is loopback",
      (c) => (c.queues.EU.baseUrl = "https://0.0.0.0:9000"),
      "hubExport:queues.EU.baseUrl: points at loopback",
    ],
    [
      "idl_date is an ISO 8601 date-time without zone",
      (c) => (c.parameters = { idl_date: "1901-01-01T00:00:00Z" }),
      "hubExport:parameters.idl_date: must be an ISO 8601 date-time without zone",
    ],
    [
      "idl_date is a real date",
      (c) => (c.parameters = { idl_date: "2026-02-30T00:00:00" }),
      "hubExport:parameters.idl_date: must be an ISO 8601 date-time without zone",
    ],
    [
      "publish schema is <DatabaseName>.<schema>",
      (c) => (c.publishSchema = "publish"),
      "hubExport:publishSchema: must have the form <DatabaseName>.<schema>",
    ],
    [
      "staging schema is <DatabaseName>.<schema>",
      (c) => (c.stagingSchema = "PLATDB.staging;drop"),
      "hubExport:stagingSchema: must have the form <DatabaseName>.<schema>",
    ],
    [
      "the schema's database is the connection's",
      (c) => (c.stagingSchema = "OTHERDB.staging"),
      "hubExport:stagingSchema: database 'OTHERDB' is not the database of the connection",
    ],
    [
      "routing-rule codes have a code's shape",
      (c) =>
        (c.hubTenants[0].routingRules = [
          {
            dataDomainCode: "EMPL",
            isDataMastered: 0,
            systemRoleCodeSource: "crm role",
            systemRoleCodeTarget: "ALL",
            status: 1,
          },
        ]),
      "hubExport:hubTenants[0].routingRules[0].systemRoleCodeSource: must be a code: an uppercase letter, then uppercase letters, digits or _ (at most 32)",
    ],
    [
      "routing-rule status is an integer",
      (c) =>
        (c.hubTenants[0].routingRules = [
          {
            dataDomainCode: "EMPL",
            isDataMastered: 0,
            systemRoleCodeSource: "OM",
            systemRoleCodeTarget: "ALL",
            status: 0.5,
          },
        ]),
      "hubExport:hubTenants[0].routingRules[0].status: must be an integer",
    ],
    [
      "routing rules carry all five fields",
      (c) =>
        (c.hubTenants[0].routingRules = [
          { dataDomainCode: "EMPL", isDataMastered: 0, systemRoleCodeSource: "OM", systemRoleCodeTarget: "ALL" },
        ]),
      "hubExport:hubTenants[0].routingRules[0].status",
    ],
    [
      "records_per_hub_message is a positive integer",
      (c) => (c.parameters = { records_per_hub_message: 0 }),
      "hubExport:parameters.records_per_hub_message: must be a positive integer",
    ],
    [
      "records_per_ers_request is an integer",
      (c) => (c.parameters = { records_per_ers_request: 2.5 }),
      "hubExport:parameters.records_per_ers_request: must be an integer",
    ],
    [
      "change_lag_seconds is not negative",
      (c) => (c.parameters = { change_lag_seconds: -5 }),
      "hubExport:parameters.change_lag_seconds: must be 0 or more",
    ],
    [
      "set_aside_after_runs is a positive integer",
      (c) => (c.parameters = { set_aside_after_runs: 0 }),
      "hubExport:parameters.set_aside_after_runs: must be a positive integer",
    ],
    [
      "schema names are safe SQL identifiers",
      (c) => (c.publishSchema = "PLATDB.pub-lish"),
      "hubExport:publishSchema: must have the form <DatabaseName>.<schema>, each a safe SQL identifier",
    ],
    [
      "database role names are safe SQL identifiers",
      (c) => (c.database.task.username = "hub export"),
      "hubExport:database.task.username: username must be a safe SQL identifier",
    ],
    [
      "tenant ids are unique",
      (c) => (
        c.hubTenants.push(rawHubTenant("US", { hubTenantCode: "OTHER" })),
        c.platTenants.push(rawPlatTenant("US", { platRegion: "CA", hubTenantCode: "OTHER" }))
      ),
      `hubExport:hubTenants[2].hubTenantId: duplicates hubTenants[0].hubTenantId '${TENANT_IDS.US}'`,
    ],
    ["unknown keys are reported", (c) => (c.tennants = []), "hubExport:tennants: is not a known key"],
    ["required keys are reported", (c) => delete c.jobName, "hubExport:jobName: is required"],
    [
      "the connection-store prefix is a Secrets Manager name prefix",
      (c) => (c.connectionStore.prefix = "/"),
      "hubExport:connectionStore.prefix: must be a Secrets Manager name prefix, not starting with /",
    ],
    [
      "the schedule's time zone is an IANA zone",
      (c) => (c.schedule.timezone = "Mars/Olympus_Mons"),
      "hubExport:schedule.timezone: must be an IANA time zone",
    ],
    [
      "the schedule expression is an EventBridge Scheduler expression",
      (c) => (c.schedule.expression = "0 3 * * *"),
      "hubExport:schedule.expression: must be an EventBridge Scheduler expression",
    ],
    [
      "the task's cpu is a Fargate size",
      (c) => (c.task = { cpu: 300 }),
      "hubExport:task.cpu: must be a Fargate CPU size",
    ],
    [
      "the task's memory fits its cpu",
      (c) => (c.task = { cpu: 256, memory: 4096 }),
      "hubExport:task.memory: is not a Fargate memory size for this cpu",
    ],
    [
      "the log retention is one CloudWatch accepts",
      (c) => (c.task = { logRetentionDays: 10 }),
      "hubExport:task.logRetentionDays: must be a CloudWatch retention",
    ],
    [
      "secrets must not be empty",
      (c) => (c.hubTenants[0].clientSecret = ""),
      "hubExport:hubTenants[0].clientSecret: must not be empty",
    ],
    [
      "secrets are strings or secure values",
      (c) => (c.hubTenants[0].clientSecret = 12345),
      "hubExport:hubTenants[0].clientSecret: must be a secret",
    ],
  ];
  it.each(cases)("%s", (_name, edit, expected) => {
    const lines = problems(edit);
    expect(
      lines.some((l) => l.startsWith(expected)),
      `expected a line starting with\n  ${expected}\ngot\n  ${lines.join("\n  ")}`,
    ).toBe(true);
  });

  it("fills the task's defaults whether or not the task key is given", () => {
    expect(validateStackConfig(rawConfig(), { source: "test" }).task).toEqual({
      cpu: 1024,
      memory: 2048,
      logRetentionDays: 30,
    });
    const raw = rawConfig();
    raw.task = { cpu: 2048 };
    expect(() => validateStackConfig(raw, { source: "test" })).toThrow(
      /hubExport:task.memory: is not a Fargate memory size/,
    );
    raw.task = { cpu: 2048, memory: 4096 };
    expect(validateStackConfig(raw, { source: "test" }).task).toEqual({
      cpu: 2048,
      memory: 4096,
      logRetentionDays: 30,
    });
  });

  it("forbids allowLoopback in the qa and prod stacks, and allows it elsewhere", () => {
    const loopback = (c: Raw) => {
      c.hub.allowLoopback = true;
      c.hub.regions.US.apis.ERS = "http://127.0.0.1:8080/ers/api/";
    };
    expect(problems(loopback, "qa")).toContain(
      "hubExport:hub.allowLoopback: must not be true in stack 'qa': only the embedded default may point at loopback",
    );
    expect(problems(loopback, "prod")[0]).toMatch(/^hubExport:hub\.allowLoopback: must not be true in stack 'prod'/);
    expect(problems(loopback, "local")).toEqual([]);
  });

  it("reports every problem at once, one line each, without values of secrets", () => {
    const raw = rawConfig();
    raw.clientName = "acme";
    raw.hubTenants[0].hubTenantId = "x";
    raw.hub.regions.US.apis.CFG = "https://hub.example.com/cfg";
    raw.hubTenants[1].clientSecret = 98765;
    let error: ConfigError | undefined;
    try {
      validateStackConfig(raw, { source: "Pulumi.qa.yaml" });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error?.lines[0]).toBe("Pulumi.qa.yaml: invalid configuration (4 problems)");
    expect(error?.lines.slice(1).map((l) => l.split(":").slice(0, 2).join(":"))).toEqual([
      "hubExport:clientName",
      "hubExport:hub.regions.US.apis.CFG",
      "hubExport:hubTenants[0].hubTenantId",
      "hubExport:hubTenants[1].clientSecret",
    ]);
    expect(error?.message).not.toContain("98765");
  });

  it("requires secrets in a stack file to be ciphertext, not plain text", () => {
    expect(problems(() => {}, "qa", true)).toContain(
      "hubExport:hubTenants[0].clientSecret: is a secret in plain text: set it with 'pulumi config set --secret' so the stack file holds only ciphertext",
    );
    const encrypted = problems(
      (c) => {
        const secure = { secure: "v1:abc:def" };
        c.database.admin.password = c.database.task.password = secure;
        for (const q of Object.values<{ clientSecret: unknown }>(c.queues)) q.clientSecret = secure;
        for (const t of c.hubTenants) t.clientSecret = secure;
      },
      "qa",
      true,
    );
    expect(encrypted).toEqual([]);
  });

  it("reports the rules across keys together with plain-text secrets in a stack file", () => {
    const lines = problems(
      (c) => {
        c.hubTenants[1].clientSecret = "plain-text-Zx9";
        c.hub.regions.EU.apis.ERS = "http://127.0.0.1:9/ers/api/";
      },
      "qa",
      true,
    );
    expect(lines).toContain(
      "hubExport:hubTenants[1].clientSecret: is a secret in plain text: set it with 'pulumi config set --secret' so the stack file holds only ciphertext",
    );
    expect(lines.filter((l) => l.startsWith("hubExport:hub.regions.EU.apis.ERS: points at loopback"))).toHaveLength(1);
    expect(lines.join("\n")).not.toContain("plain-text-Zx9");
  });

  it("keeps secrets out of JSON and string forms of the validated config", () => {
    const config = validateStackConfig(rawConfig(), { source: "test" });
    const text =
      JSON.stringify(config) +
      String(config.hubTenants[0].clientSecret) +
      require("node:util").inspect(config, { depth: 10 });
    for (const s of ["secret-us-Zx9", "admin-pw", "task-pw", "mq-us-secret"]) expect(text).not.toContain(s);
    expect(config.hubTenants[0].clientSecret.reveal()).toBe("secret-us-Zx9");
  });

  it("resolves each region's hub environment: its own values over the shared default", () => {
    const raw = rawConfig(["US", "EU"]);
    raw.hub = {
      default: { environmentName: "hub-qa", apis: rawHubEnvironment("US").apis },
      regions: { EU: { environmentName: "hub-qa-eu", apis: { ERS: "https://hub-ext-qa-eu.example.com/ers/api/" } } },
    };
    const config = validateStackConfig(raw, { source: "test" });
    expect(config.hub.environments.US).toEqual({ environmentName: "hub-qa", apis: rawHubEnvironment("US").apis });
    expect(config.hub.environments.EU).toEqual({
      environmentName: "hub-qa-eu",
      apis: { ...rawHubEnvironment("US").apis, ERS: "https://hub-ext-qa-eu.example.com/ers/api/" },
    });
    // APAC has no hub tenant; with the default it resolves too, without it it is simply absent.
    expect(config.hub.environments.APAC?.environmentName).toBe("hub-qa");
  });

  it("lets several platform tenants feed one hub tenant", () => {
    const raw = rawConfig(["US", "EU"]);
    raw.platTenants.push(rawPlatTenant("US", { platRegion: "CA" }));
    const config = validateStackConfig(raw, { source: "test" });
    expect(config.platTenants.map((p) => `${p.platRegion}->${p.hubTenantCode}`)).toEqual([
      "US->ACME_US",
      "EU->ACME_EU",
      "CA->ACME_US",
    ]);
  });

  it("answers a misspelt key with the key it is near (did you mean), at any depth", () => {
    expect(
      problems((c) => {
        c.hubTenants[0].hubRegoin = c.hubTenants[0].hubRegion;
        delete c.hubTenants[0].hubRegion;
        c.shedule = {};
        c.database.admin.pasword = "x";
        c.queues.EU.clientAcessId = "x";
        c.hubTenants[1].colour = "blue";
      }),
    ).toEqual([
      "hubExport:database.admin.pasword: is not a known key (did you mean password?)",
      "hubExport:queues.EU.clientAcessId: is not a known key (did you mean clientAccessId?)",
      "hubExport:hubTenants[0].hubRegion: is required: must be one of US, EU, APAC",
      "hubExport:hubTenants[0].hubRegoin: is not a known key (did you mean hubRegion?)",
      "hubExport:hubTenants[1].colour: is not a known key",
      "hubExport:shedule: is not a known key (did you mean schedule?)",
    ]);
  });

  it("names a key in the project's namespace (hub-export:clientName) with the other problems, where the program never reads it", () => {
    const raw = rawConfig();
    delete raw.clientName;
    const error = (() => {
      try {
        inspectStackConfig(raw, { source: "Pulumi.qa.yaml", stack: "qa", misplacedKeys: ["hub-export:clientName"] });
      } catch (err) {
        return err as ConfigError;
      }
      return undefined;
    })();
    expect(error?.lines).toEqual([
      "Pulumi.qa.yaml: invalid configuration (2 problems)",
      "hubExport:clientName: is required",
      "hub-export:clientName: not read: the program's keys are in namespace hubExport: pulumi config rm --stack qa 'hub-export:clientName' and set 'hubExport:clientName' instead",
    ]);
  });
});

describe("environment checks (procedure step 4)", () => {
  const issuesOf = (edit: (c: Raw) => void) => {
    const raw = rawConfig();
    raw.bucket.connectionName = "PLAT_S3_QA";
    raw.database.connectionName = "PLAT_WAREHOUSE_QA";
    for (const q of Object.values<{ connectionName: string }>(raw.queues)) q.connectionName += "_QA";
    edit(raw);
    return environmentIssues(validateStackConfig(raw, { source: "test" })).map(formatIssue);
  };

  it("finds nothing in a consistent QA stack, nor in the repository's stacks", () => {
    expect(issuesOf(() => {})).toEqual([]);
    for (const stack of ["qa", "prod"]) expect(environmentIssues(loadStackConfig({ stack }))).toEqual([]);
  });

  it("names each mismatch with its key path", () => {
    expect(issuesOf((c) => (c.jobName = "HRSYS_EMPL_HUB_ACME_202611_PROD"))).toEqual([
      "hubExport:jobName: 'HRSYS_EMPL_HUB_ACME_202611_PROD' does not end in the environment suffix _QA (hubExport:environment is QA)",
    ]);
    expect(issuesOf((c) => (c.queues.EU.connectionName = "HUB_MQ_EU_PROD"))).toEqual([
      "hubExport:queues.EU.connectionName: 'HUB_MQ_EU_PROD' names environment PROD, not QA",
    ]);
    expect(issuesOf((c) => (c.database.connectionName = "PLAT_WAREHOUSE"))).toEqual([
      "hubExport:database.connectionName: 'PLAT_WAREHOUSE' does not name environment QA, unlike a connection name of this stack should (e.g. a _QA suffix)",
    ]);
    expect(issuesOf((c) => (c.hub.regions.EU.environmentName = "hub-prod-eu"))).toEqual([
      "hubExport:hub.regions.EU.environmentName: hub environment 'hub-prod-eu' is a PROD environment, not QA",
    ]);
    expect(issuesOf((c) => (c.hub.regions.US.apis.ERS = "https://hub-ext-prod-us.example.com/ers/api/"))).toEqual([
      "hubExport:hub.regions.US.apis.ERS: https://hub-ext-prod-us.example.com/ers/api/ points at a PROD host, but this stack is QA",
    ]);
    expect(issuesOf((c) => (c.queues.US.baseUrl = "https://mq-prd.example.com"))).toEqual([
      "hubExport:queues.US.baseUrl: https://mq-prd.example.com points at a PROD host, but this stack is QA",
    ]);
    // The environment's bucket holds the shared scripts folder: its files need the environment's key.
    expect(issuesOf((c) => Object.assign(c.bucket, { create: false, kmsKeyArn: undefined }))).toEqual([
      "hubExport:bucket.kmsKeyArn: the bucket is adopted (the platform environment's): set the environment's shared KMS key, or the shared scripts folder /Tools/hub_python_scripts is encrypted with a key this stack creates, which the environment's other pipelines cannot decrypt",
    ]);
    expect(
      issuesOf((c) =>
        Object.assign(c.bucket, { create: false, kmsKeyArn: "arn:aws:kms:us-east-1:123456789012:key/1" }),
      ),
    ).toEqual([]);
    // The task's login role is the client's own: a name shared by two clients' stacks would be managed, and dropped, by both.
    expect(issuesOf((c) => (c.database.task.username = "hub_export_qa"))).toEqual([
      "hubExport:database.task.username: 'hub_export_qa' does not name client ACME: each client's stack manages its own login role, and two stacks of one environment naming the same role would share it (removing one drops it); e.g. hub_export_acme_qa",
    ]);
    expect(
      issuesOf((c) =>
        Object.assign(
          c,
          { clientName: "ACME_CORP", jobName: "HRSYS_EMPL_HUB_ACME_CORP_202611_QA" },
          { database: { ...c.database, task: { ...c.database.task, username: "hub_export_acme_corp_qa" } } },
        ),
      ),
    ).toEqual([]);
  });

  it("verifies TLS in qa and prod with a CA bundle; the bundle goes with verify-full only", () => {
    expect(problems((c) => (c.database.sslMode = "require"), "qa")).toEqual([
      "hubExport:database.sslMode: must be verify-full in stack 'qa': the server's certificate is checked against database.caBundle",
      "hubExport:database.caBundle: is only used with sslMode verify-full",
    ]);
    expect(problems((c) => delete c.database.caBundle, "prod")).toEqual([
      "hubExport:database.caBundle: is required in stack 'prod': the PEM file of the CA that signs the server's certificate (for RDS, the region's bundle)",
    ]);
    expect(problems((c) => (c.database.sslMode = "require"), "dev")).toEqual([
      "hubExport:database.caBundle: is only used with sslMode verify-full",
    ]);
    expect(problems((c) => (c.database.caBundle = "certs/bundle.txt"), "dev")).toEqual([
      "hubExport:database.caBundle: must be the path of a PEM file (.pem or .crt)",
    ]);
    expect(problems((c) => (c.database.provisioning = { host: "localhost", port: 15432 }), "qa")).toEqual([]);
    expect(problems((c) => (c.database.provisioning = { host: "bad host" }), "qa")).toEqual([
      "hubExport:database.provisioning.host: must be a host name or IP address",
    ]);
  });

  it("checks that hubExport:environment names the stack, when asked (the CLI on a stack file, the real program)", () => {
    const check = (stack: string, environment: string) => {
      const raw = rawConfig();
      raw.environment = environment;
      try {
        validateStackConfig(raw, { source: "test", stack, checkEnvironment: true });
        return [];
      } catch (err) {
        return (err as ConfigError).lines.slice(1);
      }
    };
    expect(check("qa", "QA")).toEqual([]);
    expect(check("prod", "QA")).toEqual([
      "hubExport:environment: is 'QA', but the stack is 'prod': a stack deploys only its own environment (name the stack after it, like qa)",
    ]);
    for (const [stack, env, ok] of [
      ["org/acme-qa", "QA", true],
      ["acme_prod", "PROD", true],
      ["qa2", "QA", false],
      ["production", "PROD", false],
    ] as const) {
      expect(stackMatchesEnvironment(stack, env), stack).toBe(ok);
    }
  });

  it("takes a secret that is not set yet as missing, and a PLACEHOLDER: value as its example, reporting both", () => {
    const raw = rawConfig();
    delete raw.database.admin.password;
    delete raw.hubTenants[1].clientSecret;
    raw.network.subnetIds = ["PLACEHOLDER:subnet-0abc", "subnet-0def"];
    raw.database.host = "PLACEHOLDER: platdb.example.com";
    const inspected = inspectStackConfig(raw, { source: "test", stack: "qa" });
    expect(inspected.config.network.subnetIds).toEqual(["subnet-0abc", "subnet-0def"]);
    expect(inspected.config.database.host).toBe("platdb.example.com");
    expect(inspected.placeholders.map((p) => [keyPathText("hubExport", p.path), p.example])).toEqual([
      ["hubExport:database.host", "platdb.example.com"],
      ["hubExport:network.subnetIds[0]", "subnet-0abc"],
    ]);
    expect(inspected.missingSecrets.map((p) => keyPathText("hubExport", p)).sort()).toEqual([
      "hubExport:database.admin.password",
      "hubExport:hubTenants[1].clientSecret",
    ]);
    expect(() => inspected.config.database.admin.password.reveal("hubExport:database.admin.password")).toThrow(
      "hubExport:database.admin.password is not set: set it with 'pulumi config set --secret --path'",
    );
    // An example must still have the right shape.
    expect(problems((c) => (c.network.subnetIds = ["PLACEHOLDER:sg-0abc"]), "qa")).toEqual([
      "hubExport:network.subnetIds[0]: must be a subnet id",
    ]);
  });
});
