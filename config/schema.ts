/**
 * The stack configuration (namespace `hubExport`): the one place where values are validated. Every other module
 * takes a StackConfig and trusts it.
 */
import { z } from "zod";
import { HUB_REGIONS, type HubRegion } from "../core/regions";
import type { ClsConfig, HubEnvironment, HubTenant, PlatTenant, StackConfig } from "../core/stackConfig";
import { HUB_API_NAMES, HUB_CONTRACT_DEFAULTS, MESSAGE_PROPERTY_KEYS, type HubContract } from "../core/hubContract";
import { routingRuleSchema } from "../core/routingRules";
import { Secret } from "../core/secret";
import { concurrencySchema } from "../core/concurrency";
import { cliText, parametersSchema, positiveInt, string, text } from "../core/parameters";
import { failureMode, pathTemplate, propertyName } from "../core/definition";
import { defaultNoCompletedRunHours, schedulePeriodHours } from "../core/schedulePeriod";
import { BUSINESS_OBJECTS } from "../core/clsTable";
import { isDotName, projectPath } from "./text";
import { UUID } from "../core/uuid";
import { secretParameter } from "../core/urlSecrets";
import { cut } from "../core/redact";

export const CONFIG_NAMESPACE = "hubExport";
/** The Pulumi project name (Pulumi.yaml `name`): also the namespace `pulumi config set` uses for a key without one. */
export const PROJECT_NAME = "hub-export";

/** Days the log bucket a stack creates keeps the created bucket's server access logs (hubExport:bucket.accessLogs). */
export const ACCESS_LOG_RETENTION_DAYS = 365;

/** Identifiers used unquoted in SQL: PostgreSQL folds them to lower case, and they must fit 63 bytes. */
const sqlIdentifier = (what: string) =>
  z
    .string()
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
      `${what} must be a safe SQL identifier: a letter or _, then letters, digits or _ (at most 63)`,
    );

/** A cross-key rule's problem at `path`, relative to the object the rule checks. */
const problem = (ctx: z.core.$RefinementCtx, path: (string | number)[], message: string) =>
  ctx.addIssue({ code: "custom", path, message });

const uuid = z.string().regex(UUID, "must be a UUID (8-4-4-4-12 hex digits)");
const hubRegion = z.enum(HUB_REGIONS, { error: `must be one of ${HUB_REGIONS.join(", ")}` });

/** Fargate's valid memory sizes (MiB) per CPU size. */
const range = (from: number, to: number) => Array.from({ length: (to - from) / 1024 + 1 }, (_, i) => from + i * 1024);
const FARGATE_MEMORY: Record<number, number[]> = {
  256: [512, 1024, 2048],
  512: range(1024, 4096),
  1024: range(2048, 8192),
  2048: range(4096, 16384),
  4096: range(8192, 30720),
};
/** The retention periods CloudWatch Logs accepts. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A name that becomes part of an S3 key, a URL path or a Secrets Manager name: never `.`, `..` or holding `..`. */
const dotless = (schema: z.ZodString) =>
  schema.refine(
    (v) => !isDotName(v),
    "must not be '.' or '..' or contain '..': it becomes part of a key, a path or a secret's name",
  );

/** Connection names: the System Name of a connection record; also part of a Secrets Manager name. */
const connectionName = dotless(
  z
    .string()
    .regex(
      /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/,
      "must start with a letter and hold only letters, digits, _ . - (at most 128)",
    ),
);
/** An access id or client id. */
const clientIdentifier = cliText(string().regex(/^\S{1,256}$/, "must be 1 to 256 characters without spaces"));
/** A name that is also part of a URL path or an S3 key. */
const pathName = cliText(
  dotless(string().regex(/^[A-Za-z0-9_.-]{1,128}$/, "must hold only letters, digits, _ . - (at most 128)")),
);

/**
 * A secret: `{secure: <ciphertext>}` in a stack file, the decrypted string under Pulumi and in local mode. Absent, it
 * is `Secret.missing()`: `validate` and `plan` work without it, and `pulumi up` stops on it (config/preflight.ts).
 */
export type SecretSource = "engine" | "file";
function secretSchema(source: SecretSource, plainCheck?: { test: (v: string) => boolean; message: string }) {
  const nonEmpty = z.string().min(1, "must not be empty");
  const plain = plainCheck ? nonEmpty.refine(plainCheck.test, plainCheck.message) : nonEmpty;
  const secure = z.strictObject({ secure: z.string().min(1) });
  const either = z.union([plain, secure], { error: "must be a secret: set it with 'pulumi config set --secret'" });
  if (source === "file") {
    return either
      .refine(
        (v) => typeof v !== "string",
        "is a secret in plain text: set it with 'pulumi config set --secret' so the stack file holds only ciphertext",
      )
      .optional()
      .transform((v) => (v === undefined ? Secret.missing() : Secret.encrypted()));
  }
  return either
    .optional()
    .transform((v) =>
      v === undefined ? Secret.missing() : typeof v === "string" ? Secret.plain(v) : Secret.encrypted(),
    );
}

/** `<DatabaseName>.<schema>`, as the specification writes publish_schema and staging_schema. */
const qualifiedSchema = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_$-]{0,62}\.[A-Za-z_][A-Za-z0-9_]{0,62}$/,
    "must have the form <DatabaseName>.<schema>, each a safe SQL identifier",
  );

/**
 * `hubExport:hubContract`: the assumed hub calls (ERS entities, HRSYS intake report, queue message properties), each
 * with today's behaviour as its default (core/hubContract.ts HUB_CONTRACT_DEFAULTS; docs/hub-contract.md). A setting
 * for a call that is turned off contradicts it and is refused, like two properties under one name.
 */
const assumedCallSchema = (name: "ers" | "intakeReport") =>
  z
    .strictObject({ enabled: z.boolean().optional(), path: pathTemplate.optional(), onFailure: failureMode.optional() })
    .superRefine((v, ctx) => {
      if (v.enabled !== false) return;
      for (const key of ["path", "onFailure"] as const) {
        if (v[key] !== undefined)
          problem(ctx, [key], "contradicts enabled: false (the call is never made); remove it or enable the call");
      }
    })
    .transform((v) => ({ ...HUB_CONTRACT_DEFAULTS[name], ...v }));
const queueMessageContractSchema = z
  .strictObject({
    enabled: z.boolean().optional(),
    names: z
      .strictObject(
        Object.fromEntries(MESSAGE_PROPERTY_KEYS.map((k) => [k, propertyName.optional()])) as Record<
          (typeof MESSAGE_PROPERTY_KEYS)[number],
          z.ZodOptional<typeof propertyName>
        >,
      )
      .optional(),
    onFailure: failureMode.optional(),
  })
  .superRefine((v, ctx) => {
    if (v.enabled === false && v.names !== undefined)
      problem(
        ctx,
        ["names"],
        "contradicts enabled: false (no properties are sent); remove it or enable the properties",
      );
    const names = { ...HUB_CONTRACT_DEFAULTS.queueMessage.names, ...v.names };
    const seen = new Map<string, string>();
    for (const key of MESSAGE_PROPERTY_KEYS) {
      const other = seen.get(names[key]);
      if (other)
        problem(
          ctx,
          ["names", key],
          `'${names[key]}' is already the name of ${other}: two properties cannot share a name`,
        );
      seen.set(names[key], key);
    }
  })
  .transform((v) => ({
    ...HUB_CONTRACT_DEFAULTS.queueMessage,
    ...v,
    names: { ...HUB_CONTRACT_DEFAULTS.queueMessage.names, ...v.names },
  }));
export const hubContractSchema = z
  .strictObject({
    ers: assumedCallSchema("ers").optional(),
    intakeReport: assumedCallSchema("intakeReport").optional(),
    queueMessage: queueMessageContractSchema.optional(),
  })
  .transform((v): HubContract => ({
    ers: v.ers ?? HUB_CONTRACT_DEFAULTS.ers,
    intakeReport: v.intakeReport ?? HUB_CONTRACT_DEFAULTS.intakeReport,
    queueMessage: v.queueMessage ?? HUB_CONTRACT_DEFAULTS.queueMessage,
  }));

/**
 * A URL must not carry credentials (`user:password@` before the host, or a secret query parameter such as
 * `?password=`): it would be stored in clear in the pipeline definition, HUB_API_CONFIG and connection records, and
 * printed by `render`. The check aborts: one line per key.
 */
function withoutCredentials(url: z.ZodString, login: string) {
  const parsed = (v: string) => (URL.canParse(v) ? new URL(v) : undefined);
  return url
    .refine((v) => !parsed(v)?.username && !parsed(v)?.password, {
      message: `must not carry credentials (user:password@ before the host): ${login}`,
      abort: true,
    })
    .superRefine((v, ctx) => {
      const secret = parsed(v) && secretParameter(parsed(v)!);
      if (secret)
        ctx.addIssue({
          code: "custom",
          message: `must not carry a secret in its query string (${cut(secret, 40)}=...): ${login}`,
          continue: false,
        });
    });
}

const apiUrl = withoutCredentials(
  z.string().url("must be a URL"),
  "a hub API authenticates with its tenant's clientId and clientSecret",
).refine((v) => v.endsWith("/api/"), "must end in /api/");

type HubEnvironmentPart = {
  environmentName?: string;
  apis?: Partial<Record<(typeof HUB_API_NAMES)[number], string | undefined>>;
};

/** Each region's environment, its own values over `hub.default`'s; a region is left out while incomplete. */
function resolveHubEnvironments(hub: {
  default?: HubEnvironmentPart;
  regions: Partial<Record<HubRegion, HubEnvironmentPart>>;
}): Partial<Record<HubRegion, HubEnvironment>> {
  const out: Partial<Record<HubRegion, HubEnvironment>> = {};
  for (const region of HUB_REGIONS) {
    const own = hub.regions[region];
    const environmentName = own?.environmentName ?? hub.default?.environmentName;
    const apis = Object.fromEntries(HUB_API_NAMES.map((n) => [n, own?.apis?.[n] ?? hub.default?.apis?.[n]]));
    if (environmentName && HUB_API_NAMES.every((n) => apis[n]))
      out[region] = { environmentName, apis: apis as HubEnvironment["apis"] };
  }
  return out;
}

/** An image in ECR by digest: `<account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<64 hex digits>`. */
export const ECR_IMAGE_BY_DIGEST =
  /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/([a-z0-9](?:[a-z0-9._/-]{0,254}[a-z0-9])?)@(sha256:[0-9a-f]{64})$/;

/** `image`: the build stack (qa) builds; a stack with `promoted` (prod) runs qa's image by digest. */
export const imageConfigSchema = z
  .strictObject({
    promoted: z
      .string()
      .regex(
        ECR_IMAGE_BY_DIGEST,
        "must be an image by digest, <account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<64 hex digits>: the build stack's output 'image'",
      )
      .optional(),
    pullAccounts: z.array(cliText(string().regex(/^\d{12}$/, "must be a 12-digit AWS account id"))).default([]),
    /**
     * The build stack adopts the repository a `pulumi destroy` of it kept (it was shared with `pullAccounts`) instead of
     * creating it (`import`): set it for the `up` that re-creates the stack, then remove it (docs/pulumi-reference.md).
     */
    adoptRepository: z.boolean().default(false),
  })
  .superRefine((v, ctx) => {
    if (v.promoted && v.pullAccounts.length > 0)
      problem(
        ctx,
        ["pullAccounts"],
        "is for the stack that builds the image: this one runs a promoted image and has no repository to share",
      );
    if (v.promoted && v.adoptRepository)
      problem(
        ctx,
        ["adoptRepository"],
        "is for the stack that builds the image: this one runs a promoted image and has no repository",
      );
  })
  .prefault({});

/** The schema of the whole stack config; `source` says how secrets arrive (see secretSchema). */
export function buildStackConfigSchema(source: SecretSource) {
  const secret = secretSchema(source);
  // A hub environment's values: its name and the ERS, CFG and HRSYS base URLs. `hub.default` holds values shared by
  // the regions (for brevity); each region's own keys win. Completeness is checked for the regions in use.
  const apis = z.strictObject(
    Object.fromEntries(HUB_API_NAMES.map((n) => [n, apiUrl.optional()])) as Record<
      (typeof HUB_API_NAMES)[number],
      z.ZodOptional<typeof apiUrl>
    >,
  );
  const hubEnvironmentPart = z.strictObject({ environmentName: text(128).optional(), apis: apis.optional() });
  const hubSchema = z
    .strictObject({
      default: hubEnvironmentPart.optional(),
      /** Per hub region (US, EU, APAC): its own environment name and API base URLs. */
      regions: z.partialRecord(hubRegion, hubEnvironmentPart).default({}),
      /** Only the embedded default may point the hub at loopback, and it must say so here. */
      allowLoopback: z.boolean().default(false),
    })
    .transform((hub) => ({ ...hub, environments: resolveHubEnvironments(hub) }));

  const queueSchema = z.strictObject({
    connectionName,
    /** The queue provider's base URL; the record's url and authUrl are derived from it. */
    baseUrl: withoutCredentials(
      z.string().url("must be a URL"),
      "the broker authenticates with clientAccessId and clientSecret",
    ),
    /** A URL path segment of the broker's publish call. */
    queueName: pathName,
    clientAccessId: clientIdentifier,
    clientSecret: secret,
    description: text(256).optional(),
  });

  /** A hub tenant: where the messages go (its region's queue and hub environment) and how it authenticates. */
  const hubTenantSchema = z.strictObject({
    hubTenantId: uuid,
    hubTenantCode: cliText(string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must hold only letters, digits, _ -")),
    hubRegion: hubRegion,
    clientId: clientIdentifier,
    clientSecret: secret,
    /** A custom rule set for this tenant; the specification's 8-rule set when absent. */
    routingRules: z.array(routingRuleSchema).min(1, "must hold at least one rule").optional(),
  });

  /** A platform tenant of the client (one HUB_PLAT_CONFIG row): a platform region whose employees feed a hub tenant. */
  const platTenantSchema = z.strictObject({
    platRegion: z.string().regex(/^[A-Z]{2,8}$/, "must be an uppercase platform region code, like US"),
    codebase: text(64),
    gblOrUs: text(64),
    secureViewSource: text(256).nullable().default(null),
    connectorId: text(256).nullable().default(null),
    /** The hubTenantCode of the hub tenant it feeds (an entry of hubExport:hubTenants). */
    hubTenantCode: text(64),
  });

  const endpoint = {
    host: z
      .string()
      .refine((v) => !v.includes("@"), {
        message:
          "must be a host name or IP address, without credentials (user:password@): the logins are database.admin and database.task",
        abort: true,
      })
      .regex(/^[A-Za-z0-9.-]{1,253}$|^\[[0-9A-Fa-f:.]+\]$/, "must be a host name or IP address"),
    port: z.number().int().min(1).max(65535).default(5432),
  };
  const databaseSchema = z
    .strictObject({
      /** The platform's database connection name: credentials.ini warehouse_connection and <DATABASE_CONNECTION_NAME>. */
      connectionName,
      /**
       * The endpoint the export task connects to (the private RDS endpoint). `host:port/database` also names the
       * database in the state of the SQL resources (their target label).
       */
      ...endpoint,
      database: z.string().regex(/^[A-Za-z_][A-Za-z0-9_$-]{0,62}$/, "must be a database name"),
      sslMode: z.enum(["disable", "require", "verify-full"]).default("require"),
      /**
       * PEM file of the CA certificates that sign the server's certificate (for RDS, the region's bundle), relative to
       * the project folder: `pulumi up` verifies the server with it, and the task gets it in its connection record.
       */
      caBundle: projectPath("the CA bundle")
        .regex(/\.(pem|crt)$/, "must be the path of a PEM file (.pem or .crt)")
        .optional(),
      /** How the machine running `pulumi up` reaches the database (a tunnel or bastion); the task endpoint by default. */
      provisioning: z.strictObject(endpoint).optional(),
      /** The login `pulumi up` runs the baseline, the task role and its grants as: not a superuser (probe --warehouse). */
      admin: z.strictObject({ username: sqlIdentifier("username"), password: secret }),
      /** The export task's least-privilege role. */
      task: z.strictObject({ username: sqlIdentifier("username"), password: secret }),
      /**
       * The roles that create tables in the publish schema besides the admin (the HR system's loader): the task may read
       * the tables each creates later (default privileges). docs/pulumi-reference.md says how to find them.
       */
      publishTableOwners: z.array(sqlIdentifier("role")).default([]),
    })
    .superRefine((db, ctx) => {
      const seen = new Set<string>();
      db.publishTableOwners.forEach((role, i) => {
        const key = role.toLowerCase();
        if (key === db.admin.username.toLowerCase())
          problem(ctx, ["publishTableOwners", i], "is the admin: the tables it creates are covered already");
        else if (seen.has(key)) problem(ctx, ["publishTableOwners", i], `names ${role} twice`);
        seen.add(key);
      });
    });

  const bucketName = cliText(
    string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "must be a valid S3 bucket name")
      .refine(
        (v) => !v.includes("..") && !/^\d+\.\d+\.\d+\.\d+$/.test(v),
        "must be a valid S3 bucket name: no two adjacent periods, not an IP address",
      ),
  );
  /** A created bucket's server access logs: to `bucket`, or to a log bucket the stack creates (`retentionDays`). */
  const accessLogsSchema = z
    .strictObject({
      bucket: bucketName.optional(),
      prefix: cliText(
        string().regex(
          /^[A-Za-z0-9!_.*'()/-]{0,512}$/,
          "must be an S3 key prefix: letters, digits and ! _ . * ' ( ) / -",
        ),
      ).optional(),
      retentionDays: positiveInt.max(3650, "must be at most 3650").optional(),
    })
    .superRefine((v, ctx) => {
      if (v.bucket && v.retentionDays !== undefined)
        problem(
          ctx,
          ["retentionDays"],
          "is for the log bucket the stack creates: the given bucket's lifecycle is its owner's",
        );
    })
    .transform((v) => ({ ...v, retentionDays: v.bucket ? undefined : (v.retentionDays ?? ACCESS_LOG_RETENTION_DAYS) }))
    .prefault({});
  const bucketSchema = z
    .strictObject({
      name: bucketName,
      /** true: create it; false: adopt an existing bucket of that name. */
      create: z.boolean().default(true),
      /** <S3_CONNECTION_NAME>: the platform's object-storage connection. */
      connectionName,
      /** The stack's KMS key (components/security/encryptionKey.ts); created when absent. */
      kmsKeyArn: z
        .string()
        .regex(
          /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[A-Za-z0-9/_-]{1,256}$/,
          "must be the ARN of a KMS key or alias",
        )
        .optional(),
      accessLogs: accessLogsSchema,
    })
    .superRefine((v, ctx) => {
      if (!v.create && (v.accessLogs.bucket || v.accessLogs.prefix))
        problem(
          ctx,
          ["accessLogs"],
          "is for a bucket the stack creates: an adopted bucket's logging is the platform's",
        );
    });

  const scheduleSchema = z.strictObject({
    expression: z
      .string()
      .max(256, "must be at most 256 characters")
      .regex(/^(cron|rate|at)\(.+\)$/, "must be an EventBridge Scheduler expression: cron(...), rate(...) or at(...)"),
    timezone: z.string().refine(isTimeZone, "must be an IANA time zone, like UTC or Europe/Berlin").default("UTC"),
    enabled: z.boolean().default(true),
  });

  const networkSchema = z.strictObject({
    subnetIds: z
      .array(z.string().regex(/^subnet-[0-9a-z]{1,32}$/, "must be a subnet id"))
      .min(1, "must list at least one subnet"),
    securityGroupIds: z
      .array(z.string().regex(/^sg-[0-9a-z]{1,32}$/, "must be a security group id"))
      .min(1, "must list at least one security group"),
    assignPublicIp: z.boolean().default(false),
  });

  const taskSchema = z
    .strictObject({
      cpu: z
        .number()
        .refine((v) => v in FARGATE_MEMORY, `must be a Fargate CPU size: ${Object.keys(FARGATE_MEMORY).join(", ")}`)
        .default(1024),
      memory: positiveInt.default(2048),
      logRetentionDays: z
        .number()
        .refine(
          (v) => LOG_RETENTION_DAYS.includes(v),
          `must be a CloudWatch retention: ${LOG_RETENTION_DAYS.join(", ")}`,
        )
        .default(30),
      /** Run in an existing ECS cluster instead of creating one. */
      clusterArn: z
        .string()
        .regex(
          /^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:cluster\/[A-Za-z0-9_-]{1,255}$/,
          "must be the ARN of an ECS cluster",
        )
        .optional(),
    })
    .refine((t) => !(t.cpu in FARGATE_MEMORY) || FARGATE_MEMORY[t.cpu].includes(t.memory), {
      path: ["memory"],
      message:
        "is not a Fargate memory size for this cpu (cpu 256: 512-2048; 512: 1024-4096; 1024: 2048-8192; 2048: 4096-16384; 4096: 8192-30720, in steps of 1024)",
    })
    // prefault: an absent `task` is parsed, so the inner defaults are the only ones.
    .prefault({});

  /** Where failures are reported (SNS subscriptions) and when silence is a failure too. */
  const alertsSchema = z
    .strictObject({
      email: z
        .array(
          z
            .string()
            .max(254, "must be at most 254 characters")
            .regex(/^[^@\s]+@[^@\s]+\.[^@\s]+$/, "must be an email address"),
        )
        .default([]),
      /** Webhook URLs usually carry a token: each is a secret. */
      https: z
        .array(secretSchema(source, { test: (v) => /^https:\/\/[^\s/]+/.test(v), message: "must be an https:// URL" }))
        .default([]),
      /** The "no completed run within N hours" alarm; default: the schedule's longest gap plus a quarter (at least 2 h). */
      noCompletedRunWithinHours: z
        .number()
        .int("must be a whole number of hours")
        .min(1, "must be at least 1")
        .max(168, "must be at most 168: CloudWatch evaluates an alarm over 7 days at most")
        .optional(),
    })
    .prefault({});

  /** The HR system's exports for the CLS load sheet, and the unknown-code check of a run (cls/README.md). */
  const columnName = cliText(string().trim().min(1, "must name a column").max(128, "must be at most 128 characters"));
  const clsSchema = z.strictObject({
    /** Folder of the exports, one CSV or XLSX file per business object; relative to the project folder. */
    exports: projectPath("the folder of the HR system's exports"),
    /** Per business object, when its file or its column names cannot be detected. */
    businessObjects: z
      .partialRecord(
        z.enum(BUSINESS_OBJECTS, { error: `must be one of ${BUSINESS_OBJECTS.join(", ")}` }),
        z.strictObject({
          file: z
            .string()
            .regex(/^[^/\\]{1,250}\.(csv|xlsx)$/i, "must be a .csv or .xlsx file name in the exports folder")
            .optional(),
          code: columnName.optional(),
          description: columnName.optional(),
        }),
      )
      .default({}),
    /** false: unknown codes are reported and the run goes on; true: the affected employees' messages are held back. */
    strict: z.boolean().default(false),
  });

  const stackConfigSchema = z
    .strictObject({
      /** Environment label, used in names and descriptions: QA, PROD, LOCAL. */
      environment: z.string().regex(/^[A-Z][A-Z0-9]{0,15}$/, "must be an uppercase environment label, like QA"),
      clientName: z
        .string()
        .regex(
          /^[A-Z][A-Z0-9_]{0,41}$/,
          "must be uppercase (A-Z, 0-9, _), start with a letter and be at most 42 characters, so that HUB_<CLIENT_NAME>_MESSAGES_ARCHIVE is a valid table name",
        ),
      /** Also a part of S3 keys (the rendered pipeline, pipelines/hub_hrsys_export/<JOB_NAME>.Json). */
      jobName: pathName,
      publishSchema: qualifiedSchema,
      stagingSchema: qualifiedSchema,
      parameters: parametersSchema.prefault({}),
      /** The assumed hub calls; absent: today's behaviour (HUB_CONTRACT_DEFAULTS). */
      hubContract: hubContractSchema.prefault({}),
      bucket: bucketSchema,
      database: databaseSchema,
      /** Secrets Manager prefix of the connection-strings entity collection: <prefix>/connection-strings/<System Name>. */
      connectionStore: z.strictObject({
        prefix: cliText(
          string()
            .regex(
              /^[A-Za-z0-9_+=.@-][A-Za-z0-9/_+=.@-]{0,255}$/,
              "must be a Secrets Manager name prefix, not starting with /",
            )
            .refine(
              (v) =>
                v
                  .replace(/\/+$/, "")
                  .split("/")
                  .every((segment) => segment !== "" && !isDotName(segment)),
              "must be folder names joined by single /: no empty, '.' or '..' parts",
            ),
        ).transform((p) => p.replace(/\/+$/, "")),
      }),
      hub: hubSchema,
      queues: z.partialRecord(hubRegion, queueSchema),
      hubTenants: z.array(hubTenantSchema).min(1, "must list at least one hub tenant"),
      platTenants: z.array(platTenantSchema).min(1, "must list at least one platform tenant"),
      schedule: scheduleSchema,
      network: networkSchema,
      task: taskSchema,
      image: imageConfigSchema,
      concurrency: concurrencySchema,
      cls: clsSchema.optional(),
      /** A vendor scripts release (procedure step 7.1): hub_python_scripts.zip, a path relative to the project. */
      scriptsRelease: z
        .strictObject({
          zip: projectPath("the scripts release").regex(
            /\.zip$/i,
            "must be the path of a .zip file (hub_python_scripts.zip)",
          ),
        })
        .optional(),
      alerts: alertsSchema,
    })
    .transform((config, ctx) => {
      if (config.alerts.noCompletedRunWithinHours !== undefined || config.schedule.expression.startsWith("at("))
        return config;
      const period = schedulePeriodHours(config.schedule.expression);
      const hours = period === undefined ? undefined : defaultNoCompletedRunHours(period);
      if (hours === undefined || hours > 168) {
        problem(
          ctx,
          ["alerts", "noCompletedRunWithinHours"],
          hours === undefined
            ? `is required: the period of schedule ${config.schedule.expression} cannot be derived (L, W, # or a fixed year)`
            : `is required: schedule ${config.schedule.expression} runs ${Math.round(period!)} hours apart, and the alarm looks back 168 hours at most`,
        );
        return z.NEVER;
      }
      return { ...config, alerts: { ...config.alerts, noCompletedRunWithinHours: hours } };
    });
  return stackConfigSchema;
}

/** Config as the Pulumi engine (or local mode) hands it over: secrets decrypted. */
export const stackConfigSchema = buildStackConfigSchema("engine");
/** Config read from a Pulumi.<stack>.yaml file: secrets must be ciphertext. */
export const stackFileConfigSchema = buildStackConfigSchema("file");

export type { ClsConfig, HubEnvironment, HubRegion, HubTenant, PlatTenant, StackConfig };

// The schema's output is core's StackConfig, both ways: a field added to one and not the other fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaOutputIsStackConfig: Same<z.output<typeof stackConfigSchema>, StackConfig> = true;
void schemaOutputIsStackConfig;
