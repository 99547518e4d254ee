/**
 * The root component: the whole installation procedure of one stack, from the validated stack config. It plans with
 * core/installation.ts (pure) and hands each part to its component. Secrets leave the core Secret wrapper only here, straight
 * into Pulumi secrets (secretInputs), so that no component argument, state entry or output holds them in plain text.
 */
import fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config/schema";
import { installationOf, type Installation, type RenderedSql } from "../core/installation";
import { serializeConnectionRecord, CONNECTION_TYPES } from "../core/connections";
import { BUCKET_FOLDERS, HUB_CONFIGURATION_FILES, hubConfigurationFolder } from "../core/naming";
import { intakeJobWrittenWhenPresent } from "../core/intakeJob";
import { projectFile, type LoadedScriptsRelease } from "../config/load";
import { hubChecklist } from "../core/hubChecklist";
import { hubConfigurationFiles } from "../core/hubConfiguration";
import type { ClsSheetFiles } from "../config/clsSheets";
import { loadClientRunTables, loadPipelineTemplate, loadSqlBaseline, type SqlBaseline } from "../templates";
import { awsContext } from "./awsContext";
import { physicalName, taskNames } from "./naming";
import { pulumiSecret } from "./secrets";
import { EncryptionKey } from "./security/encryptionKey";
import { PlatformBucket, type RetentionOptions } from "./storage/platformBucket";
import { CredentialFiles } from "./storage/credentialFiles";
import type { ObjectInspector } from "./storage/objectGuard";
import { ScriptsRelease } from "./storage/scriptsRelease";
import { ConnectionStore } from "./connections/connectionStore";
import { Warehouse } from "./warehouse/warehouse";
import type { SqlFile } from "./warehouse/sqlBaseline";
import { ConfigTables } from "./warehouse/configTables";
import { warehouseLogin } from "./warehouse/connection";
import { HubRoutingRules } from "./hub/hubRoutingRules";
import { HubConfiguration } from "./hub/hubConfiguration";
import { TaskImage } from "./task/taskImage";
import { taskSourceHash } from "./task/sourceHash";
import { CONTAINER_NAME, ExportTask, LOG_STREAM_PREFIX, runTaskCommand } from "./task/exportTask";
import { ExportSchedule } from "./task/exportSchedule";
import { onRemoval } from "./onRemoval";
import { alertEndpointKey, ExportMonitoring } from "./monitoring/exportMonitoring";

export interface HubExportArgs {
  config: StackConfig;
  /** Default: the repository's templates/sql common-schema baseline. */
  baseline?: SqlBaseline;
  /** Default: the repository's templates/sql client run tables. */
  runTables?: SqlBaseline;
  /** Default: the hash of the task's sources (components/task/sourceHash.ts). */
  taskSourceHash?: string;
  /** The CLS load sheets, built from `hubExport:cls.exports` (config/clsSheets.ts); required when the config has `cls`. */
  cls?: ClsSheetFiles;
  /** The vendor scripts release of `hubExport:scriptsRelease` (config/load.ts loadScriptsRelease), read before declaring. */
  scriptsRelease?: LoadedScriptsRelease;
  /** Write the image's build context (a real preview or up); the offline plan only names it. */
  writeImageContext?: boolean;
  /** How an adopted bucket's guard looks at objects: HeadObject and GetObjectTagging by default (objectGuard.ts). */
  objectInspector?: ObjectInspector;
}

/** database.caBundle's content, or undefined when none is configured or the file is not on this machine. */
function readCaBundle(config: StackConfig): string | undefined {
  const file = config.database.caBundle;
  if (!file) return undefined;
  const absolute = projectFile(file, "hubExport:database.caBundle");
  return fs.existsSync(absolute) ? fs.readFileSync(absolute, "utf8") : undefined;
}

/** Every secret the procedure needs, as Pulumi secrets: the only place where core Secrets are revealed. */
export function secretInputs(installation: Installation) {
  const { config } = installation;
  return {
    adminPassword: pulumiSecret(config.database.admin.password, "hubExport:database.admin.password"),
    taskPassword: pulumiSecret(config.database.task.password, "hubExport:database.task.password"),
    // The stored record always holds a password (or could); secret as a whole.
    connectionRecords: installation.connections.map((record) => ({
      systemName: record.systemName,
      type: record.type,
      description: record.description,
      secretString: pulumi.secret(serializeConnectionRecord(record)),
    })),
    // This stack's tenant_credentials.txt entries (hub tenant id → credentials string), secret as a whole.
    tenantCredentials: pulumi.secret(
      JSON.parse(installation.scriptFiles.tenantCredentials.reveal("tenant_credentials.txt entries")) as Record<
        string,
        string
      >,
    ),
    routingRules: installation.routingRules.map((r) => ({
      tenantId: r.tenant.hubTenantId,
      cfgApiUrl: r.cfgApiUrl,
      rules: r.rules,
      credentialsString: pulumiSecret(r.credentialsString, `tenant ${r.tenant.hubTenantId} credentials string`),
    })),
    // The alert webhooks, each with the hash that names its subscription.
    alertEndpoints: config.alerts.https.map((h, i) => ({
      key: alertEndpointKey(h.reveal(`hubExport:alerts.https[${i}] key`)),
      endpoint: pulumiSecret(h, `hubExport:alerts.https[${i}]`),
    })),
  };
}

function sqlFile(file: RenderedSql): SqlFile {
  return {
    name: file.name,
    buildNumber: file.buildNumber,
    templateSha256: file.sha256,
    sql: file.sql,
    tables: file.tables,
  };
}

/** prod protects its key, a created bucket and the baseline; any other stack can be destroyed without leftovers. */
export function retentionOf(config: Pick<StackConfig, "environment">): RetentionOptions {
  const prod = config.environment === "PROD";
  return { protect: prod, destroyable: !prod };
}

export class HubExport extends pulumi.ComponentResource {
  /** The stack outputs: what operators look for after `pulumi up`; nothing secret. */
  readonly outputs;

  constructor(name: string, args: HubExportArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:index:HubExport", name, {}, opts);
    const { config } = args;
    const installation = installationOf(config, {
      template: loadPipelineTemplate(),
      baseline: args.baseline ?? loadSqlBaseline(),
      runTables: args.runTables ?? loadClientRunTables(),
      databaseCaPem: readCaBundle(config),
    });
    if (config.cls && !args.cls)
      throw new Error(
        "HubExport: the stack config has cls, but no CLS load sheets were built (config/clsSheets.ts buildStackSheets)",
      );
    const secrets = secretInputs(installation);
    const aws = awsContext(this);
    const child = { parent: this };

    const retention = retentionOf(config);
    const { name: taskName, logGroupName, roles: roleNames } = taskNames(config);

    const key = new EncryptionKey(
      `${name}-key`,
      {
        existingKeyArn: config.bucket.kmsKeyArn,
        aliasName: physicalName(config, "", 250),
        description: `HRSYS export to the hub, ${config.clientName} ${config.environment}: bucket objects, connection records, task logs`,
        logGroupName,
        protect: retention.protect,
        aws,
      },
      child,
    );

    // Steps 1, 3 and 6: folders, the rendered template, the scripts templates (but those a scripts release brings).
    const release = args.scriptsRelease;
    const fromRelease = new Set((release?.files ?? []).map((f) => BUCKET_FOLDERS.scripts + f.name));
    const bucket = new PlatformBucket(
      `${name}-bucket`,
      {
        bucketName: config.bucket.name,
        create: config.bucket.create,
        kmsKeyArn: key.keyArn,
        region: aws.region,
        objectInspector: args.objectInspector,
        files: installation.bucketObjects
          .filter((o) => !fromRelease.has(o.key))
          .map((o) => ({ key: o.key, content: o.content, contentType: o.contentType, shared: o.shared })),
        retention,
        accessLogs: config.bucket.accessLogs,
        accountId: aws.accountId,
      },
      child,
    );
    // Step 7.1: the release replaces the scripts folder's content, folder structure kept, the platform's files left.
    const scriptsRelease = release
      ? new ScriptsRelease(
          `${name}-scripts-release`,
          {
            bucketName: bucket.bucketName,
            prefix: BUCKET_FOLDERS.scripts,
            region: aws.region,
            kmsKeyArn: key.keyArn,
            release,
          },
          { parent: this, dependsOn: [bucket] },
        )
      : undefined;
    // Steps 7.2 to 7.4: this stack's part of the shared credentials.ini and tenant_credentials.txt, after the templates.
    const credentialFiles = new CredentialFiles(
      `${name}-credential-files`,
      {
        bucketName: bucket.bucketName,
        prefix: BUCKET_FOLDERS.scripts,
        region: aws.region,
        kmsKeyArn: key.keyArn,
        warehouseConnection: installation.scriptFiles.warehouseConnection,
        tenantCredentials: secrets.tenantCredentials,
      },
      { parent: this, dependsOn: scriptsRelease ? [bucket, scriptsRelease] : [bucket] },
    );

    // Step 2: the connection records.
    const connections = new ConnectionStore(
      `${name}-connections`,
      { prefix: config.connectionStore.prefix, kmsKeyArn: key.keyArn, records: secrets.connectionRecords },
      child,
    );

    // Step 5: schemas, the common baseline, the client's run tables, the task's role, then the config rows. The SQL
    // resources keep only the database's label; they get the admin login from their provider's configuration.
    const db = config.database;
    const login = warehouseLogin(db, secrets.adminPassword);
    const warehouse = new Warehouse(
      `${name}-warehouse`,
      {
        login,
        publishSchema: installation.publishSchema,
        stagingSchema: installation.stagingSchema,
        task: { username: db.task.username, password: secrets.taskPassword },
        publishTableOwners: db.publishTableOwners,
        // Adopting another pipeline's HUB_INTAKE_JOB: the columns the task writes when present are not "never written".
        baseline: {
          ...sqlFile(installation.baseline),
          writtenWhenPresent: intakeJobWrittenWhenPresent(installation.stagingSchema),
        },
        runTables: sqlFile(installation.runTables),
        protect: retention.protect,
      },
      child,
    );
    const configTables = new ConfigTables(
      `${name}-config-tables`,
      {
        target: login.label,
        schema: installation.stagingSchema,
        rows: [...installation.rows.apiConfig, ...installation.rows.platConfig],
      },
      { parent: this, dependsOn: [warehouse.baseline] },
    );

    // Hub side: the routing rules of every tenant.
    const routing = new HubRoutingRules(`${name}-hub-routing-rules`, { tenants: secrets.routingRules }, child);

    // Hub side without an API: the CLS load sheets and the checklist, in the bucket for the hub team.
    const cls = config.cls ? args.cls : undefined;
    const checklist = hubChecklist(config, pulumi.getStack(), { rows: cls?.sheet?.rows.length });
    const hubConfiguration = new HubConfiguration(
      `${name}-hub-configuration`,
      { placement: bucket.placement, files: hubConfigurationFiles({ jobName: config.jobName, checklist, cls }) },
      child,
    );
    const clsSheetKey = cls ? hubConfigurationFolder(config.jobName) + HUB_CONFIGURATION_FILES.clsCsv : undefined;

    // Step 9: the image, the task and its schedule.
    // Built once (the build stack), promoted by digest (prod runs what qa tested, and never builds).
    const image = new TaskImage(
      `${name}-image`,
      {
        repositoryName: physicalName(config, "", 256),
        sourceHash: config.image.promoted ? "" : (args.taskSourceHash ?? taskSourceHash()),
        forceDelete: retention.destroyable,
        promoted: config.image.promoted,
        pullAccounts: config.image.pullAccounts,
        partition: aws.partition,
        adoptRepository: config.image.adoptRepository,
        writeContext: args.writeImageContext,
      },
      child,
    );
    const task = new ExportTask(
      `${name}-task`,
      {
        name: taskName,
        logGroupName,
        roleNames,
        existingClusterArn: config.task.clusterArn,
        cpu: config.task.cpu,
        memory: config.task.memory,
        logRetentionDays: config.task.logRetentionDays,
        retainLogs: retention.protect,
        imageUri: image.imageUri,
        repositoryArn: image.repositoryArn,
        bucketName: bucket.bucketName,
        bucketArn: bucket.bucketArn,
        definitionKey: installation.definitionKey,
        scriptsPrefix: BUCKET_FOLDERS.scripts,
        cls: clsSheetKey ? { sheetKey: clsSheetKey, strict: config.cls!.strict } : undefined,
        connectionStorePrefix: config.connectionStore.prefix,
        connectionSecretArns: connections.connections.map((c) => c.secretArn),
        kmsKeyArn: key.keyArn,
        concurrency: config.concurrency,
        schedule: config.schedule.expression,
        aws,
      },
      child,
    );
    // Operating it: failure alerts, the schedule's dead letters, the no-run-completed alarm, the dashboard.
    const monitoring = new ExportMonitoring(
      `${name}-monitoring`,
      {
        baseName: physicalName(config, "", 40),
        jobName: config.jobName,
        environment: config.environment,
        hubRegions: installation.regions,
        clusterArn: task.clusterArn,
        taskDefinitionFamilyArn: task.taskDefinitionFamilyArn,
        logGroupName: task.logGroupName,
        email: config.alerts.email,
        https: secrets.alertEndpoints,
        noCompletedRunWithinHours: config.alerts.noCompletedRunWithinHours,
        scheduleEnabled: config.schedule.enabled,
        aws,
      },
      child,
    );

    // The first scheduled run needs everything above in place, the tenants' routing rules included.
    const schedule = new ExportSchedule(
      `${name}-schedule`,
      {
        name: physicalName(config),
        roleName: physicalName(config, "schedule"),
        description: `Runs pipeline ${config.jobName} (${config.environment})`,
        expression: config.schedule.expression,
        timezone: config.schedule.timezone,
        enabled: config.schedule.enabled,
        clusterArn: task.clusterArn,
        taskDefinitionArn: task.taskDefinitionArn,
        taskDefinitionFamilyArn: task.taskDefinitionFamilyArn,
        taskRoleArn: task.taskRoleArn,
        executionRoleArn: task.executionRoleArn,
        ...config.network,
        deadLetterQueueArn: monitoring.deadLetterQueueArn,
        aws,
      },
      {
        parent: this,
        dependsOn: [
          bucket,
          credentialFiles,
          connections,
          warehouse,
          configTables,
          routing,
          hubConfiguration,
          monitoring,
        ],
      },
    );

    const byType = (type: string) => installation.connections.filter((c) => c.type === type);
    const { kept, removed } = onRemoval(config, retention, logGroupName);
    this.outputs = {
      bucket: bucket.bucketName,
      // The tagged template, byte for byte (procedure step 1); the rendered pipeline the task runs.
      templateKey: BUCKET_FOLDERS.templates + installation.template.fileName,
      definitionKey: installation.definitionKey,
      jobName: config.jobName,
      intakeJobQuery: installation.intakeJobQuery,
      scheduleName: schedule.scheduleName,
      connectionNames: {
        storage: byType(CONNECTION_TYPES.storage)[0].systemName,
        database: byType(CONNECTION_TYPES.database)[0].systemName,
        queues: Object.fromEntries(byType(CONNECTION_TYPES.queue).map((c) => [c.region!, c.systemName])),
      },
      connectionSecretNames: Object.fromEntries(connections.connections.map((c) => [c.systemName, c.secretName])),
      routingRuleCounts: routing.ruleCounts,
      hubChecklist: checklist,
      clsLoadSheets: cls
        ? [HUB_CONFIGURATION_FILES.clsCsv, HUB_CONFIGURATION_FILES.clsXlsx].map(
            (f) => `s3://${config.bucket.name}/${hubConfigurationFolder(config.jobName)}${f}`,
          )
        : [],
      cluster: task.clusterArn,
      taskDefinition: task.taskDefinitionArn,
      logGroup: task.logGroupName,
      // By digest, as the task definition runs it.
      image: image.imageUri,
      repositoryUrl: image.repositoryUrl,
      taskRoleArn: task.taskRoleArn,
      databaseRole: db.task.username,
      subnetIds: config.network.subnetIds,
      securityGroupIds: config.network.securityGroupIds,
      runTaskCommand: pulumi
        .all([aws.region, task.clusterArn, task.taskDefinitionArn])
        .apply(([region, clusterArn, taskDefinitionArn]) =>
          runTaskCommand({ region, clusterArn, taskDefinitionArn, ...config.network }),
        ),
      alerts: {
        topicArn: monitoring.topicArn,
        deadLetterQueueUrl: monitoring.deadLetterQueueUrl,
        dashboard: monitoring.dashboardName,
        alarms: monitoring.alarmNames,
      },
      // What `hub-export run-now` needs to start the task as the schedule does.
      runTask: {
        region: aws.region,
        cluster: task.clusterArn,
        taskDefinition: task.taskDefinitionArn,
        containerName: CONTAINER_NAME,
        ...config.network,
        logGroup: task.logGroupName,
        logStreamPrefix: LOG_STREAM_PREFIX,
      },
      // What a destroy or a rename keeps and why, and what it removes that people notice.
      onRemoval: { kept: kept.map(({ what, why }) => ({ what, why })), removed },
    };
    this.registerOutputs({ ...this.outputs });
  }
}
