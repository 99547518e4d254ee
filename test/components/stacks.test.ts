/**
 * Each stack file of the repository, run through the real program under mocks: the resources `pulumi up` would
 * register, with the inputs it would send.
 */
import { INTAKE_JOB_KNOWN_COLUMNS } from "../../core/intakeJob";
import { beforeAll, describe, expect, it } from "vitest";
import { configFromEngine } from "../../config/load";
import type { StackConfig } from "../../config/schema";
import { renderTemplate } from "../../core/template";
import { renderBaseline, renderCommonSchema } from "../../core/baseline";
import { hubApiConfigRows, hubPlatConfigRows, rowName } from "../../core/rows";
import { routingRulesFor, defaultRoutingRules } from "../../core/routingRules";
import { connectionRecords, serializeConnectionRecord } from "../../core/connections";
import { scriptFileEntries } from "../../core/credentialFiles";
import { encodeCredentialsString } from "../../core/credentials";
import { intakeJobQuery } from "../../core/naming";
import fs from "node:fs";
import path from "node:path";
import { loadClientRunTables, loadPipelineTemplate, loadSqlBaseline, TEMPLATES_DIR } from "../../templates";
import { baselineTables } from "../../providers/baseline";
import { routingRulesHash } from "../../core/routingRules";
import { imageContextFolder, imageTag } from "../../components/task/taskImage";
import type { PlanRun } from "../../components/planner";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { FIXED_SOURCE_HASH, inputs, isSecretInput, ofType, one, outputs, planOf } from "../fixtures/plan";

const ACCOUNT = "123456789012";
const REGION = "us-east-1";
/** Where each stack's image is: qa builds it into its repository (the mocks' account); prod runs it from qa's account. */
const IMAGE_ACCOUNT = { qa: ACCOUNT, prod: "111111111111" };

const T = {
  bucket: "aws:s3/bucket:Bucket",
  object: "aws:s3/bucketObjectv2:BucketObjectv2",
  secret: "aws:secretsmanager/secret:Secret",
  secretVersion: "aws:secretsmanager/secretVersion:SecretVersion",
  row: "pulumi-nodejs:dynamic/hubExport:ConfigRow",
  rules: "pulumi-nodejs:dynamic/hubExport:RoutingRuleSet",
  baseline: "pulumi-nodejs:dynamic/hubExport:SqlBaseline",
  runTables: "pulumi-nodejs:dynamic/hubExport:ClientRunTables",
  role: "aws:iam/role:Role",
  rolePolicy: "aws:iam/rolePolicy:RolePolicy",
  taskDefinition: "aws:ecs/taskDefinition:TaskDefinition",
  schedule: "aws:scheduler/schedule:Schedule",
  key: "aws:kms/key:Key",
  grant: "postgresql:index/grant:Grant",
  scriptFiles: "pulumi-nodejs:dynamic/hubExport:ScriptFileEntries",
  sharedObject: "pulumi-nodejs:dynamic/hubExport:SharedObject",
};

for (const stack of ["qa", "prod"] as const) {
  describe(`stack ${stack}`, () => {
    let run: PlanRun;
    let config: StackConfig;
    let placeholders: string[];
    const slug = `acme-${stack}`;

    beforeAll(async () => {
      const engine = fixtureStack(stack);
      placeholders = engine.placeholders;
      config = configFromEngine(engine.config, stack);
      run = await planOf(engine.config, stack);
    });

    it("nests every resource under one HubExport root, one component per part of the procedure", () => {
      const root = one(run, "hubExport:index:HubExport");
      const components = run.resources
        .filter((r) => r.parent === root.urn)
        .map((r) => r.type)
        .sort();
      expect(components).toEqual([
        "hubExport:connections:ConnectionStore",
        "hubExport:hub:HubConfiguration",
        "hubExport:hub:HubRoutingRules",
        "hubExport:monitoring:ExportMonitoring",
        "hubExport:security:EncryptionKey",
        "hubExport:storage:CredentialFiles",
        "hubExport:storage:PlatformBucket",
        "hubExport:task:ExportSchedule",
        "hubExport:task:ExportTask",
        "hubExport:task:TaskImage",
        "hubExport:warehouse:ConfigTables",
        "hubExport:warehouse:Warehouse",
      ]);
      for (const r of run.resources)
        if (r.type.startsWith("hubExport:")) expect(r.type).toMatch(/^hubExport:[a-z]+:[A-Z][A-Za-z]+$/);
      for (const r of run.resources) if (r.type !== "pulumi:pulumi:Stack") expect(r.parent).toBeDefined();
    });

    it("uploads the tagged template byte for byte, this job's rendered pipeline, and the scripts folder", () => {
      const source = loadPipelineTemplate();
      const rendered = renderTemplate(source, config);
      const objects = Object.fromEntries(ofType(run, T.object).map((r) => [inputs(r).key, r]));
      const sharedObjects = Object.fromEntries(ofType(run, T.sharedObject).map((r) => [inputs(r).key, r]));
      const definitionKey = `pipelines/hub_hrsys_export/${config.jobName}.Json`;
      const hubConfiguration = `hub-configuration/${config.jobName}/`;
      // The stack's own objects: every key names the job, so that clients sharing the bucket never meet.
      expect(Object.keys(objects).sort()).toEqual([
        `${hubConfiguration}HUB_CHECKLIST.json`,
        `${hubConfiguration}HUB_CHECKLIST.md`,
        // The CLS load sheets only where the stack has hubExport:cls (qa).
        ...(stack === "qa"
          ? [`${hubConfiguration}cls/CLS_LOAD_SHEET.csv`, `${hubConfiguration}cls/CLS_LOAD_SHEET.xlsx`]
          : []),
        definitionKey,
      ]);
      // What every pipeline of the platform environment shares: created only where absent, never overwritten or deleted.
      expect(Object.keys(sharedObjects).sort()).toEqual([
        "Tools/hub_python_scripts/",
        "Tools/hub_python_scripts/credentials_template.ini",
        "Tools/hub_python_scripts/tenant_credentials_template.txt",
        "pipelines/hub_hrsys_export/",
        "templates/hub_hrsys_export/",
        `templates/hub_hrsys_export/${source.fileName}`,
      ]);
      // Step 1's download source is the file in this repository, byte for byte, tags and all.
      const onDisk = fs.readFileSync(path.join(TEMPLATES_DIR, "hub_hrsys_export", source.fileName));
      expect(
        Buffer.from(inputs(sharedObjects[`templates/hub_hrsys_export/${source.fileName}`]).content, "utf8").equals(
          onDisk,
        ),
      ).toBe(true);
      const template = inputs(objects[definitionKey]);
      expect(template.content).toBe(rendered.text);
      expect(template.bucket).toBe(config.bucket.name);
      // The stack's own files go with it, except in an adopted bucket (prod), where every object the stack wrote stays.
      const retained = ofType(run, T.object)
        .filter((r) => r.options.retainOnDelete)
        .map((r) => inputs(r).key)
        .sort();
      expect(retained).toEqual(stack === "prod" ? Object.keys(objects).sort() : []);
      const regions = JSON.parse(template.content)
        .tasks.find((t: { type: string }) => t.type === "PublishMessages")
        .steps.map((s: { region: string }) => s.region);
      expect(regions).toEqual(stack === "qa" ? ["US", "EU"] : ["US", "EU", "APAC"]);

      // The shared credential files: this stack's entries merged in (SSE-KMS under the stack's key), secret, after
      // the templates they are created from.
      const keyArn = stack === "prod" ? config.bucket.kmsKeyArn : outputs(one(run, T.key, "hub-export-key")).arn;
      const entries = one(run, T.scriptFiles);
      const expected = scriptFileEntries(config);
      expect(inputs(entries)).toMatchObject({
        location: {
          kind: "s3",
          bucket: config.bucket.name,
          prefix: "Tools/hub_python_scripts/",
          region: "us-east-1",
          kmsKeyArn: keyArn,
        },
        warehouseConnection: config.database.connectionName,
        entries: JSON.parse(expected.tenantCredentials.reveal()),
        version: 2,
      });
      expect(isSecretInput(entries, "entries")).toBe(true);
      expect(entries.options.additionalSecretOutputs).toEqual(["entries"]);
      for (const key of [
        "Tools/hub_python_scripts/credentials_template.ini",
        "Tools/hub_python_scripts/tenant_credentials_template.txt",
      ])
        expect(entries.dependsOn).toContain(sharedObjects[key].urn);
      // Every object the stack writes itself: SSE-KMS under the stack's key explicitly, tagged as this stack's; in the
      // adopted (prod) bucket retained on delete. A shared one it creates: SSE-KMS under the stack's key too.
      for (const object of ofType(run, T.object)) {
        expect(inputs(object)).toMatchObject({
          serverSideEncryption: "aws:kms",
          kmsKeyId: keyArn,
          tags: { "hub-export:stack": `hub-export/${stack}` },
        });
        if (stack === "prod") expect(object.options.retainOnDelete, object.name).toBe(true);
      }
      for (const object of ofType(run, T.sharedObject))
        expect(inputs(object).location).toEqual({
          kind: "s3",
          bucket: config.bucket.name,
          prefix: "",
          region: "us-east-1",
          kmsKeyArn: keyArn,
        });
    });

    it("creates or adopts the bucket as configured", () => {
      const bucket = one(run, T.bucket, "hub-export-bucket");
      // The bucket's own settings (its access-log bucket's: test/components/accessLogs.test.ts).
      const settings = run.resources.filter(
        (r) =>
          /^aws:s3\/bucket(PublicAccessBlock|Versioning|ServerSideEncryptionConfiguration|Policy):/.test(r.type) &&
          r.name === "hub-export-bucket",
      );
      if (stack === "qa") {
        expect(bucket.read).toBe(false);
        // qa: `pulumi destroy` empties it (every version) instead of failing on it; not protected.
        expect(inputs(bucket)).toEqual({ bucket: "acme-platform-qa", forceDestroy: true });
        expect(bucket.options.protect).toBeUndefined();
        expect(settings.map((r) => r.type.split(":")[2]).sort()).toEqual([
          "BucketPolicy",
          "BucketPublicAccessBlock",
          "BucketServerSideEncryptionConfiguration",
          "BucketVersioning",
        ]);
        const sse = inputs(settings.find((r) => r.type.endsWith("BucketServerSideEncryptionConfiguration"))!);
        expect(sse.rules).toEqual([
          {
            applyServerSideEncryptionByDefault: {
              sseAlgorithm: "aws:kms",
              kmsMasterKeyId: outputs(one(run, T.key, "hub-export-key")).arn,
            },
            bucketKeyEnabled: true,
          },
        ]);
      } else {
        // Adopted: read by name, never created or deleted, its settings left alone; the configured key is used.
        expect(bucket.read).toBe(true);
        expect(bucket.id).toBe("acme-platform-prod");
        expect(settings).toEqual([]);
        expect(ofType(run, T.key).map((k) => k.name)).toEqual(["hub-export-monitoring-key"]);
      }
    });

    it("creates a KMS key that CloudWatch Logs may use only for the task's log group (qa), or uses the configured one (prod)", () => {
      if (stack === "prod") {
        // Only the alerts topic's own key (components/monitoring).
        expect(ofType(run, T.key).map((k) => k.name)).toEqual(["hub-export-monitoring-key"]);
        return;
      }
      const key = one(run, T.key, "hub-export-key");
      expect(key.options.protect).toBeUndefined();
      expect(inputs(key)).toMatchObject({ enableKeyRotation: true, deletionWindowInDays: 30 });
      expect(JSON.parse(inputs(key).policy).Statement).toEqual([
        {
          Sid: "DelegateToIamPolicies",
          Effect: "Allow",
          Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` },
          Action: "kms:*",
          Resource: "*",
        },
        {
          Sid: "EncryptTheTaskLogGroup",
          Effect: "Allow",
          Principal: { Service: `logs.${REGION}.amazonaws.com` },
          Action: ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
          Resource: "*",
          Condition: {
            ArnEquals: {
              "kms:EncryptionContext:aws:logs:arn": `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:/ecs/hub-export-${slug}`,
            },
          },
        },
      ]);
    });

    it("stores one connection record per connection, the whole record as a KMS-encrypted secret", () => {
      const records = connectionRecords(config);
      expect(records.map((r) => r.systemName)).toEqual(
        stack === "qa"
          ? ["PLAT_S3_QA", "PLAT_WAREHOUSE_QA", "HUB_MQ_US_QA", "HUB_MQ_EU_QA"]
          : ["PLAT_S3_PROD", "PLAT_WAREHOUSE_PROD", "HUB_MQ_US_PROD", "HUB_MQ_EU_PROD", "HUB_MQ_APAC_PROD"],
      );
      const secrets = ofType(run, T.secret);
      const versions = ofType(run, T.secretVersion);
      expect(secrets.map((s) => inputs(s).name)).toEqual(
        records.map((r) => `acme/${stack}/connection-strings/${r.systemName}`),
      );
      for (const [i, record] of records.entries()) {
        // Derived entirely from config: deleted at once, so re-adding a region (the same name) never collides.
        expect(inputs(secrets[i]).recoveryWindowInDays).toBe(0);
        expect(inputs(secrets[i]).kmsKeyId).toBe(
          stack === "prod" ? config.bucket.kmsKeyArn : outputs(one(run, T.key, "hub-export-key")).arn,
        );
        expect(inputs(versions[i]).secretId).toBe(outputs(secrets[i]).arn);
        expect(inputs(versions[i]).secretString).toBe(serializeConnectionRecord(record));
        expect(isSecretInput(versions[i], "secretString")).toBe(true);
      }
    });

    it("creates the schemas, applies the common baseline, then the client's run tables, and grants the task role least privilege", () => {
      const baseline = one(run, T.baseline);
      const clientRunTables = one(run, T.runTables);
      const common = renderCommonSchema(loadSqlBaseline(), config);
      const client = renderBaseline(loadClientRunTables(), config);
      const sql = `${common}\n${client}`;
      expect(inputs(baseline)).toMatchObject({
        name: loadSqlBaseline().name,
        buildNumber: loadSqlBaseline().buildNumber,
        templateSha256: loadSqlBaseline().sha256,
        sql: common,
        version: 3,
      });
      // Adopting another pipeline's HUB_INTAKE_JOB: the earlier layout's columns are written when present.
      expect(inputs(baseline).writtenWhenPresent).toEqual({ "staging.hub_intake_job": [...INTAKE_JOB_KNOWN_COLUMNS] });
      expect(inputs(clientRunTables)).toMatchObject({
        name: loadClientRunTables().name,
        buildNumber: loadClientRunTables().buildNumber,
        templateSha256: loadClientRunTables().sha256,
        sql: client,
        version: 3,
      });
      expect(inputs(clientRunTables).writtenWhenPresent).toBeUndefined();
      expect(baselineTables(client).sort()).toEqual([
        "staging.hub_acme_messages",
        "staging.hub_acme_messages_archive",
        "staging.hub_acme_messages_status",
        "staging.hub_acme_rows_held_back",
      ]);
      expect(baselineTables(common).filter((t) => t.includes("acme"))).toEqual([]);
      // After the common schema (its tables hold what the run tables' rows refer to).
      expect(clientRunTables.dependsOn).toContain(baseline.urn);
      for (const r of [baseline, clientRunTables]) {
        // The label of the task endpoint, no login; retained on delete, and protected in prod.
        expect(inputs(r).target).toBe(`${config.database.host}:5432/PLATDB`);
        expect(inputs(r)).not.toHaveProperty("connection");
        expect(r.options, r.name).toEqual({ retainOnDelete: true, ...(stack === "prod" ? { protect: true } : {}) });
      }

      // Sorted by kind: the mocks register resources as their inputs resolve, not in declaration order.
      const kinds = ["database", "schema", "table", "sequence"];
      const grants = ofType(run, T.grant)
        .map((g) => {
          const { objectType, schema, objects, privileges, role } = inputs(g);
          return { objectType, schema, objects, privileges, role };
        })
        .sort(
          (a, b) =>
            kinds.indexOf(a.objectType) - kinds.indexOf(b.objectType) ||
            String(a.schema).localeCompare(String(b.schema)) ||
            (a.objects?.length ?? 0) - (b.objects?.length ?? 0),
        );
      const role = `hub_export_acme_${stack}`;
      // The run tables are the other staging tables of both files; the known ones must be among them.
      const runTables = baselineTables(sql)
        .map((t) => t.slice("staging.".length))
        .filter((t) => t !== "hub_api_config" && t !== "hub_plat_config" && t !== "hub_intake_job")
        .sort();
      expect(runTables).toEqual(
        expect.arrayContaining([
          "hub_acme_messages",
          "hub_acme_messages_archive",
          "hub_acme_messages_status",
          "hub_export_run",
          "hub_export_watermark",
        ]),
      );
      // One grant per staging table: a new table adds a grant and replaces none. (Registration order follows
      // the schemas' outputs: compare as sets.)
      const key = (g: object) => JSON.stringify(g);
      expect(grants.map(key).sort()).toEqual(
        [
          { objectType: "database", schema: undefined, objects: undefined, privileges: ["CONNECT"], role },
          { objectType: "schema", schema: "publish", objects: undefined, privileges: ["USAGE"], role },
          { objectType: "table", schema: "publish", objects: [], privileges: ["SELECT"], role },
          { objectType: "schema", schema: "staging", objects: undefined, privileges: ["USAGE"], role },
          // The run history's serial id: inserting needs its sequence.
          {
            objectType: "sequence",
            schema: "staging",
            objects: ["hub_export_run_history_history_id_seq"],
            privileges: ["USAGE"],
            role,
          },
          { objectType: "table", schema: "staging", objects: ["hub_api_config"], privileges: ["SELECT"], role },
          { objectType: "table", schema: "staging", objects: ["hub_plat_config"], privileges: ["SELECT"], role },
          // The specification's HUB_INTAKE_JOB is shared with other pipelines: the task adds its rows, never changes any.
          {
            objectType: "table",
            schema: "staging",
            objects: ["hub_intake_job"],
            privileges: ["INSERT", "SELECT"],
            role,
          },
          ...runTables.map((t) => ({
            objectType: "table",
            schema: "staging",
            objects: [t],
            privileges: ["DELETE", "INSERT", "SELECT", "UPDATE"],
            role,
          })),
        ]
          .map(key)
          .sort(),
      );
      // Replaced delete-first: the old grant's REVOKE never takes back what its replacement granted.
      for (const g of [...ofType(run, T.grant), ...ofType(run, "postgresql:index/defaultPrivileges:DefaultPrivileges")])
        expect(g.options.deleteBeforeReplace, g.name).toBe(true);
      // Staging grants wait for the resource that creates their table.
      const clientTables = new Set(baselineTables(client).map((t) => t.slice("staging.".length)));
      for (const g of ofType(run, T.grant).filter(
        (g) => inputs(g).schema === "staging" && inputs(g).objectType !== "schema",
      )) {
        expect(g.dependsOn, g.name).toContain(
          (clientTables.has(inputs(g).objects[0]) ? clientRunTables : baseline).urn,
        );
      }
      const taskRole = one(run, "postgresql:index/role:Role");
      expect(inputs(taskRole)).toMatchObject({
        name: role,
        login: true,
        superuser: false,
        createDatabase: false,
        createRole: false,
      });
      expect(isSecretInput(taskRole, "password")).toBe(true);
      const provider = one(run, "pulumi:providers:postgresql");
      expect(isSecretInput(provider, "password")).toBe(true);
      // qa and prod verify the server against the configured CA bundle, named relative to the project folder (where
      // Pulumi starts the provider): the same input from every checkout.
      expect(inputs(provider)).toMatchObject({
        host: config.database.host,
        sslmode: "verify-full",
        sslrootcert: "certs/rds-global-bundle.pem",
      });
    });

    it("writes exactly the config-table rows of the tenants, after the baseline", () => {
      const expected = [...hubApiConfigRows(config), ...hubPlatConfigRows(config)];
      const rows = ofType(run, T.row);
      expect(rows.map((r) => r.name)).toEqual(expected.map((row) => `hub-export-config-tables/${rowName(row)}`));
      const baseline = one(run, T.baseline);
      for (const [i, row] of expected.entries()) {
        expect(inputs(rows[i])).toMatchObject({
          target: `${config.database.host}:5432/PLATDB`,
          schema: "staging",
          table: row.table,
          key: row.key,
          values: row.values,
          version: 2,
        });
        expect(inputs(rows[i])).not.toHaveProperty("connection");
        expect(rows[i].dependsOn).toContain(baseline.urn);
      }
      expect(rows).toHaveLength(config.hubTenants.length * 3 + config.platTenants.length);
    });

    it("posts each hub tenant's routing rules to its own region's CFG API, with its credentials string as a secret", () => {
      const sets = ofType(run, T.rules);
      expect(sets.map((s) => s.name)).toEqual(
        config.hubTenants.map((t) => `hub-export-hub-routing-rules/${t.hubTenantId}`),
      );
      for (const [i, tenant] of config.hubTenants.entries()) {
        const rules = routingRulesFor(tenant);
        expect(rules).toEqual(defaultRoutingRules());
        expect(inputs(sets[i])).toMatchObject({
          cfgApiUrl: config.hub.environments[tenant.hubRegion]!.apis.CFG,
          tenantId: tenant.hubTenantId,
          rules,
          rulesHash: routingRulesHash(rules),
          credentialsString: encodeCredentialsString({
            clientId: tenant.clientId,
            clientSecret: tenant.clientSecret.reveal(),
          }),
        });
        expect(isSecretInput(sets[i], "credentialsString")).toBe(true);
        expect(sets[i].options.additionalSecretOutputs).toEqual(["credentialsString"]);
      }
    });

    it("grants the task, execution and schedule roles exactly what they need", () => {
      const bucketArn = `arn:aws:s3:::acme-platform-${stack}`;
      const keyArn = stack === "prod" ? config.bucket.kmsKeyArn! : outputs(one(run, T.key, "hub-export-key")).arn;
      const secretArns = ofType(run, T.secret)
        .map((s) => outputs(s).arn as string)
        .sort();
      const policy = (name: string) =>
        JSON.parse(inputs(ofType(run, T.rolePolicy).find((p) => inputs(p).name === name)!).policy);
      const family = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/hub-export-${slug}`;
      const roleArn = (suffix: string) => `arn:aws:iam::${ACCOUNT}:role/hub-export-${slug}-${suffix}`;

      // With hubExport:cls (qa) the task also reads its job's CLS load sheet, and nothing else of hub-configuration/.
      const readable = [
        "Tools/hub_python_scripts/",
        ...(stack === "qa" ? [`hub-configuration/${config.jobName}/cls/CLS_LOAD_SHEET.csv`] : []),
        `pipelines/hub_hrsys_export/${config.jobName}.Json`,
      ];
      expect(policy("export-task-access")).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "ReadDefinitionAndScripts",
            Effect: "Allow",
            Action: ["s3:GetObject"],
            Resource: readable.map((p) => `${bucketArn}/${p}*`),
          },
          {
            Sid: "ListDefinitionAndScriptsFolders",
            Effect: "Allow",
            Action: ["s3:ListBucket"],
            Resource: [bucketArn],
            Condition: { StringLike: { "s3:prefix": readable.map((p) => `${p}*`) } },
          },
          {
            Sid: "ReadConnectionRecords",
            Effect: "Allow",
            Action: ["secretsmanager:GetSecretValue"],
            Resource: secretArns,
          },
          {
            Sid: "DecryptThroughS3AndSecretsManager",
            Effect: "Allow",
            Action: ["kms:Decrypt"],
            Resource: [keyArn],
            Condition: {
              StringEquals: {
                "kms:ViaService": [`s3.${REGION}.amazonaws.com`, `secretsmanager.${REGION}.amazonaws.com`],
              },
            },
          },
        ],
      });
      expect(policy("export-task-start")).toEqual({
        Version: "2012-10-17",
        Statement: [
          // prod pulls the image promoted from qa's repository (in qa's account); qa its own.
          {
            Sid: "PullTaskImage",
            Effect: "Allow",
            Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            Resource: [`arn:aws:ecr:${REGION}:${IMAGE_ACCOUNT[stack]}:repository/hub-export-acme-qa`],
          },
          { Sid: "AuthenticateToRegistry", Effect: "Allow", Action: ["ecr:GetAuthorizationToken"], Resource: ["*"] },
          {
            Sid: "WriteTaskLogs",
            Effect: "Allow",
            Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
            Resource: [`arn:aws:logs:${REGION}:${ACCOUNT}:log-group:/ecs/hub-export-${slug}:log-stream:*`],
          },
        ],
      });
      // Only the task role reads connection records, exactly the stack's; the execution role touches no secret or key.
      expect(secretArns).toHaveLength(connectionRecords(config).length);
      const policies = ofType(run, T.rolePolicy).map((p) => ({
        name: inputs(p).name as string,
        text: inputs(p).policy as string,
      }));
      expect(policies.map((p) => p.name).sort()).toEqual([
        "export-task-access",
        "export-task-start",
        "run-export-task",
      ]);
      for (const p of policies)
        expect(p.text.includes("secretsmanager:") || p.text.includes(keyArn)).toBe(p.name === "export-task-access");
      expect(policy("run-export-task")).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "RunExportTask",
            Effect: "Allow",
            Action: ["ecs:RunTask"],
            Resource: [`${family}:*`],
            Condition: { ArnEquals: { "ecs:cluster": `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/hub-export-${slug}` } },
          },
          {
            Sid: "PassExportTaskRoles",
            Effect: "Allow",
            Action: ["iam:PassRole"],
            Resource: [roleArn("execution"), roleArn("task")],
            Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
          },
          {
            Sid: "DeadLetterUndeliveredRuns",
            Effect: "Allow",
            Action: ["sqs:SendMessage"],
            Resource: [`arn:aws:sqs:${REGION}:${ACCOUNT}:hub-export-${slug}-schedule-dlq`],
          },
        ],
      });
      const trust = (name: string) =>
        JSON.parse(inputs(ofType(run, T.role).find((r) => inputs(r).name === name)!).assumeRolePolicy);
      // The task role with the confused-deputy conditions AWS recommends for task roles; the execution role exactly as
      // AWS documents task execution roles' trust (no condition: the agents' image pull is not documented to carry one).
      expect(trust(`hub-export-${slug}-task`).Statement).toEqual([
        {
          Sid: "EcsTasksOfThisAccount",
          Effect: "Allow",
          Principal: { Service: "ecs-tasks.amazonaws.com" },
          Action: "sts:AssumeRole",
          Condition: {
            StringEquals: { "aws:SourceAccount": ACCOUNT },
            ArnLike: { "aws:SourceArn": `arn:aws:ecs:${REGION}:${ACCOUNT}:*` },
          },
        },
      ]);
      expect(trust(`hub-export-${slug}-execution`)).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "EcsTaskExecution",
            Effect: "Allow",
            Principal: { Service: "ecs-tasks.amazonaws.com" },
            Action: "sts:AssumeRole",
          },
        ],
      });
      expect(trust(`hub-export-${slug}-schedule`).Statement[0].Principal).toEqual({
        Service: "scheduler.amazonaws.com",
      });
    });

    it("defines the Fargate task: the definition in the bucket on its command line, no container secrets", () => {
      const definition = inputs(one(run, T.taskDefinition));
      expect(definition).toMatchObject({
        family: `hub-export-${slug}`,
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: String(config.task.cpu),
        memory: String(config.task.memory),
        taskRoleArn: `arn:aws:iam::${ACCOUNT}:role/hub-export-${slug}-task`,
        executionRoleArn: `arn:aws:iam::${ACCOUNT}:role/hub-export-${slug}-execution`,
      });
      const [container] = JSON.parse(definition.containerDefinitions);
      const templateKey = `pipelines/hub_hrsys_export/${config.jobName}.Json`;
      // Pinned by digest: in qa the one its push gave; prod runs the promoted one and builds nothing.
      const builds = ofType(run, "docker-build:index:Image");
      if (stack === "qa")
        expect(container.image).toBe(
          `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/hub-export-${slug}@${outputs(builds[0]).digest}`,
        );
      else expect(container.image).toBe(config.image.promoted);
      expect(builds).toHaveLength(stack === "qa" ? 1 : 0);
      expect(container.image).toMatch(/@sha256:[0-9a-f]{64}$/);
      // Never root, whatever the image says.
      expect(container.user).toBe("1000:1000");
      const clsCheck =
        stack === "qa"
          ? [
              "--cls",
              `s3://acme-platform-qa/hub-configuration/${config.jobName}/cls/CLS_LOAD_SHEET.csv`,
              "--cls-mode",
              "report",
            ]
          : [];
      expect(container.command).toEqual([
        "run",
        "--definition",
        `s3://acme-platform-${stack}/${templateKey}`,
        "--scripts",
        `s3://acme-platform-${stack}/Tools/hub_python_scripts/`,
        "--connections",
        `secretsmanager:acme/${stack}`,
        ...clsCheck,
      ]);
      expect(container.environment).toEqual([
        { name: "AWS_REGION", value: REGION },
        { name: "HUB_EXPORT_CONCURRENCY", value: JSON.stringify(config.concurrency) },
        // The run deadline's default comes from the schedule (core/runDeadline.ts).
        { name: "HUB_EXPORT_SCHEDULE", value: config.schedule.expression },
      ]);
      expect(container.stopTimeout).toBe(120);
      // The task reads its connection records itself (task role): nothing is injected, no ARN in the definition.
      expect(container).not.toHaveProperty("secrets");
      expect(definition.containerDefinitions).not.toContain("secretsmanager:GetSecretValue");
      expect(definition.containerDefinitions).not.toMatch(/arn:aws:secretsmanager:/);
      expect(container.logConfiguration).toEqual({
        logDriver: "awslogs",
        options: {
          "awslogs-group": `/ecs/hub-export-${slug}`,
          "awslogs-region": REGION,
          "awslogs-stream-prefix": "export",
        },
      });
      const keyArn = stack === "prod" ? config.bucket.kmsKeyArn : outputs(one(run, T.key, "hub-export-key")).arn;
      expect(inputs(one(run, "aws:cloudwatch/logGroup:LogGroup"))).toMatchObject({
        retentionInDays: config.task.logRetentionDays,
        kmsKeyId: keyArn,
      });
      if (stack === "prod") {
        expect(ofType(run, "aws:ecr/repository:Repository")).toEqual([]);
        return;
      }
      // The image is built from its sources' content hash, which tags it; its inputs hold nothing that changes from
      // run to run but the registry login, whose changes the provider ignores.
      const build = builds[0];
      expect(inputs(build)).toMatchObject({
        context: { location: imageContextFolder(FIXED_SOURCE_HASH) },
        dockerfile: { location: "task/Dockerfile" },
        platforms: ["linux/amd64"],
        push: true,
        buildOnPreview: false,
        tags: [`${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/hub-export-${slug}:${imageTag(FIXED_SOURCE_HASH)}`],
      });
      // qa's repository is prod's source: prod's account pulls from it, and it is kept, with every tagged image.
      const repository = one(run, "aws:ecr/repository:Repository");
      expect(inputs(repository)).toMatchObject({
        imageScanningConfiguration: { scanOnPush: true },
        imageTagMutability: "IMMUTABLE",
        forceDelete: false,
      });
      expect(repository.options.retainOnDelete).toBe(true);
      expect(JSON.parse(inputs(one(run, "aws:ecr/repositoryPolicy:RepositoryPolicy")).policy)).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "PullPromotedImages",
            Effect: "Allow",
            Principal: { AWS: ["arn:aws:iam::210987654321:root"] },
            Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
          },
        ],
      });
      expect(
        JSON.parse(inputs(one(run, "aws:ecr/lifecyclePolicy:LifecyclePolicy")).policy).rules.map(
          (r: { selection: { tagStatus: string } }) => r.selection.tagStatus,
        ),
      ).toEqual(["untagged"]);
      // The task definition waits for the push of its image.
      expect(one(run, T.taskDefinition).dependsOn).toContain(build.urn);
    });

    it("schedules the task on Fargate in the configured network", () => {
      const schedule = inputs(one(run, T.schedule));
      expect(schedule).toMatchObject({
        name: `hub-export-${slug}`,
        scheduleExpression: config.schedule.expression,
        scheduleExpressionTimezone: config.schedule.timezone,
        state: "ENABLED",
        flexibleTimeWindow: { mode: "OFF" },
      });
      expect(schedule.target).toMatchObject({
        arn: `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/hub-export-${slug}`,
        roleArn: `arn:aws:iam::${ACCOUNT}:role/hub-export-${slug}-schedule`,
        ecsParameters: {
          taskDefinitionArn: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/hub-export-${slug}:1`,
          launchType: "FARGATE",
          taskCount: 1,
          networkConfiguration: {
            subnets: config.network.subnetIds,
            securityGroups: config.network.securityGroupIds,
            assignPublicIp: false,
          },
        },
      });
      // The first run needs the whole installation: files, connection records, grants, rows and routing rules first.
      const waitsFor = one(run, T.schedule).dependsOn;
      expect(ofType(run, T.rules)).toHaveLength(config.hubTenants.length);
      for (const type of [T.object, T.secretVersion, T.row, T.grant, T.baseline, T.rules])
        for (const r of ofType(run, type)) expect(waitsFor).toContain(r.urn);
    });

    it("creates the schedule disabled when schedule.enabled is false", async () => {
      const disabled = await planOf(
        editKey<Record<string, unknown>>(fixtureStack(stack).config, "schedule", (schedule) => ({
          ...schedule,
          enabled: false,
        })),
        stack,
      );
      expect(inputs(one(disabled, T.schedule))).toMatchObject({
        name: `hub-export-${slug}`,
        state: "DISABLED",
        scheduleExpression: config.schedule.expression,
      });
    });

    it("exports what operators look for, nothing secret", () => {
      const out = run.outputs;
      expect(out).toMatchObject({
        bucket: `acme-platform-${stack}`,
        templateKey: `templates/hub_hrsys_export/${loadPipelineTemplate().fileName}`,
        definitionKey: `pipelines/hub_hrsys_export/${config.jobName}.Json`,
        jobName: config.jobName,
        intakeJobQuery: intakeJobQuery(config),
        scheduleName: `hub-export-${slug}`,
        routingRuleCounts: Object.fromEntries(config.hubTenants.map((t) => [t.hubTenantId, 8])),
      });
      expect((out.connectionNames as { queues: object }).queues).toEqual(
        Object.fromEntries(Object.entries(config.queues).map(([r, q]) => [r, q.connectionName])),
      );
      const definition = outputs(one(run, T.taskDefinition));
      const network = `awsvpcConfiguration={subnets=[${config.network.subnetIds.join(",")}],securityGroups=[${config.network.securityGroupIds.join(",")}],assignPublicIp=DISABLED}`;
      expect(out).toMatchObject({
        subnetIds: config.network.subnetIds,
        securityGroupIds: config.network.securityGroupIds,
        repositoryUrl: `${IMAGE_ACCOUNT[stack]}.dkr.ecr.${REGION}.amazonaws.com/hub-export-acme-qa`,
        taskRoleArn: `arn:aws:iam::${ACCOUNT}:role/hub-export-${slug}-task`,
        databaseRole: `hub_export_acme_${stack}`,
        runTaskCommand: `aws ecs run-task --region ${REGION} --cluster arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/hub-export-${slug} --task-definition ${definition.arn} --launch-type FARGATE --network-configuration '${network}' --started-by hub-export-operator`,
      });
      const text = JSON.stringify(run.outputs);
      expect(text).not.toContain("4dabf18193072939515e22adb298388d"); // no secret-tagged value at all
      expect(placeholders.length).toBeGreaterThan(0);
      for (const p of placeholders) expect(text).not.toContain(p);
    });
  });
}
