/**
 * The embedded default (`npm start` = `hub-export local`): embedded PostgreSQL and the hub emulator on loopback, the
 * local platform provisioned from a stack config with the same plan and providers as `pulumi up`, sample employees,
 * and one run of the export task exactly as the container runs it: the bundle, in a child process.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { loadScriptsRelease, loadStackConfig, readStackFile, stackFilePath } from "../config/load";
import { validateStackConfig } from "../config/validate";
import { stripPlaceholders } from "../config/placeholders";
import { planInstallation, type InstallationPlan } from "../core/plan";
import { BUCKET_FOLDERS, HUB_CONFIGURATION_FILES, hubConfigurationFolder } from "../core/naming";
import { hubChecklist } from "../core/hubChecklist";
import { hubConfigurationFiles } from "../core/hubConfiguration";
import { sheetsFromValues } from "../cls/stack";
import { writeHubConfiguration } from "./stores";
import { HUB_REGIONS } from "../core/regions";
import { loadPipelineTemplate, loadSqlSources } from "../templates";
import { startEmulator, type Emulator } from "../emulator";
import { startEmbeddedPostgres } from "./embeddedPostgres";
import { localPaths, type LocalPaths } from "./paths";
import { localSecrets } from "./secrets";
import { localOverrides } from "./overrides";
import { provisionLocal, grantTaskRole } from "./provision";
import { createProgress, type ProgressDisplay } from "./progress";
import { ensureTaskBundle, runTaskBundle, type TaskRunResult } from "./taskProcess";
import { CONCURRENCY_ENV } from "../core/concurrency";
import { latestIntakeJobs, type IntakeJobRow } from "./status";
import { runStatus } from "./summary";
import { SAMPLE_BUSINESS_OBJECTS, seedSampleEmployees, touchEmployees } from "../task/model/sampleData";
import { PUBLISH_TABLES } from "../task/model/schema";
import { quoteIdent } from "../providers/pg";
import { untilStopSignal } from "../cli/signals";
import { localDatabaseUrl } from "./database";
import { connectionFileName } from "../core/naming";
import type { EmfRecord } from "../core/metrics";

export interface LocalOptions {
  stack?: string;
  file?: string;
  /** Sample employees seeded on the first start. */
  employees: number;
  /** Employees changed before a later start's incremental export. */
  changes: number;
  seed: number;
  keep: boolean;
  json: boolean;
  root?: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Resolves when the user asks to stop (--keep); default: SIGINT/SIGTERM. */
  untilStopped?: () => Promise<void>;
  /** With --keep: called with the summary before waiting, so that it is shown while the platform runs. */
  onSummary?: (summary: LocalSummary) => void;
}

export interface LocalSummary {
  jobName: string;
  transactionId: string | null;
  status: string;
  exitCode: number;
  firstRun: boolean;
  seeded: number;
  changed: number;
  intakeJob: IntakeJobRow | null;
  regions: Record<string, { destination: string; queueName: string; messages: number; duplicates: number; rejected: number }>;
  ers: Record<string, { requests: number; entities: number }>;
  routingRules: Record<string, number>;
  files: { root: string; bucket: string; definition: string; scripts: string; clsSheet: string; connections: string; postgres: string; taskLog: string };
  /** `url` is the admin URL with its password masked; `psqlUrl` is the task login's, whose password is in `passwordFile`. */
  database: { url: string; stagingSchema: string; psqlUrl: string; passwordFile: string; psql: string };
  /** The run's CloudWatch metrics, as its log carried them (embedded metric format). */
  metrics: EmfRecord[];
  hub: { cfg: string; ers: string; hrsys: string; state: string; queues: Record<string, string> };
  queries: { intakeJob: string; statuses: string; statusCommand: string };
  seconds: number;
}

export async function runLocal(options: LocalOptions): Promise<LocalSummary> {
  const started = Date.now();
  const paths = localPaths(options.root);
  const progress = createProgress(options.stderr, { quiet: false });
  // The stack file first: a bad --stack or --file is reported before anything starts.
  loadStackConfig({ file: options.file, stack: options.file ? options.stack : (options.stack ?? "qa") });
  const file = options.file ?? stackFilePath(options.stack ?? "qa");
  // Local mode runs on the stack file's examples: the PLACEHOLDER: values stand for what the embedded default provides.
  const raw = stripPlaceholders(readStackFile(file)).value;
  const tenants = (raw.hubTenants as { hubTenantId: string; clientId: string }[] | undefined) ?? [];
  const queues = (raw.queues as Record<string, { clientAccessId: string; queueName: string }> | undefined) ?? {};

  fs.mkdirSync(paths.logs, { recursive: true });
  // When the server runs as the postgres user, that user must be able to enter the state folder.
  fs.chmodSync(paths.root, 0o755);

  progress.step(`embedded PostgreSQL (${path.relative(process.cwd(), paths.postgres) || paths.postgres})`);
  const firstRun = !fs.existsSync(path.join(paths.postgres, "PG_VERSION"));
  const pg = await startEmbeddedPostgres({ dataDir: paths.postgres, persistent: true, owner: `hub-export local${options.keep ? " --keep" : ""}` });
  let emulator: Emulator | undefined;
  try {
    const secrets = localSecrets(paths.secrets, Object.keys(queues), tenants.map((t) => t.hubTenantId));

    progress.step("hub and queue emulator");
    emulator = await startEmulator({
      config: {
        queues: Object.fromEntries(
          Object.entries(queues).map(([region, q]) => [region, { clientId: q.clientAccessId, clientSecret: secrets.queues[region], orgId: `local-org-${region.toLowerCase()}`, envId: "local" }]),
        ),
        tenants: Object.fromEntries(tenants.map((t) => [t.hubTenantId, { clientId: t.clientId, clientSecret: secrets.tenants[t.hubTenantId] }])),
      },
    });
    const adminUrl = pg.adminUrl;
    const endpoints = {
      database: { host: "127.0.0.1", port: pg.port, adminPassword: decodeURIComponent(new URL(adminUrl).password) },
      hubApis: { ERS: emulator.urls.ers, CFG: emulator.urls.cfg, HRSYS: emulator.urls.hrsys },
      queues: emulator.urls.queues,
    };
    const config = validateStackConfig(localOverrides(raw, endpoints, secrets), { source: `${file} (local overrides)`, stack: "local" });
    const plan = planInstallation(config, { template: loadPipelineTemplate(), ...loadSqlSources() });

    progress.step(`provisioning the local platform for ${config.clientName} (${plan.regions.join(", ")})`);
    const provisioned = await provisionLocal(plan, paths, adminUrl, config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined);
    // The hub side without an API: the CLS load sheets, built from the sample data's business objects, and the checklist.
    const cls = await sheetsFromValues(SAMPLE_BUSINESS_OBJECTS, "the sample data's business objects");
    writeHubConfiguration(paths.bucket, hubConfigurationFiles({ jobName: config.jobName, checklist: hubChecklist(config, "local", { rows: cls.sheet.rows.length }), cls }));
    const clsSheet = path.join(paths.bucket, hubConfigurationFolder(config.jobName), HUB_CONFIGURATION_FILES.clsCsv);
    const clsMode = config.cls?.strict ? "strict" : "report";

    const { seeded, changed } = await prepareEmployees(plan, provisioned.databaseUrl, options, progress);
    // Tables the seed created after the grants: grant again (idempotent).
    await grantTaskRole(provisioned.databaseUrl, plan, quoteIdent(config.database.task.username, "role"));

    progress.step("building the export task bundle");
    const bundle = await ensureTaskBundle();
    const definition = path.join(paths.bucket, plan.definitionKey);
    const scripts = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
    const taskLog = path.join(paths.logs, `task-${new Date().toISOString().replace(/[:.]/g, "-")}.log`);

    progress.step(`running the export task: ${config.jobName}`);
    // The stack's concurrency reaches the task as it does in the container (components/task/exportTask.ts).
    const env = { [CONCURRENCY_ENV]: JSON.stringify(config.concurrency) };
    const run: TaskRunResult = await runTaskBundle({ bundle, args: ["run", "--definition", definition, "--scripts", scripts, "--connections", paths.connections, "--cls", clsSheet, "--cls-mode", clsMode], logFile: taskLog, progress, env });
    progress.close();

    const summary = await summarize({ plan, paths, emulator, databaseUrl: provisioned.databaseUrl, port: pg.port, run, firstRun, seeded, changed, definition, scripts, clsSheet, taskLog, started });
    if (options.keep) {
      options.onSummary?.(summary);
      options.stderr.write(
        `\nKeeping the database and the emulator running until Ctrl-C:\n  database  ${summary.database.psqlUrl}  (password: field "password" of ${summary.database.passwordFile})\n  psql      ${summary.database.psql}\n  emulator  ${emulator.urls.state}\n`,
      );
      await (options.untilStopped ?? untilStopSignal)();
    }
    return summary;
  } finally {
    await emulator?.close().catch(() => {});
    await pg.stop().catch(() => {});
  }
}

/** First start: seed the sample employees. Later starts: change some, so the export is incremental. */
async function prepareEmployees(plan: InstallationPlan, databaseUrl: string, options: LocalOptions, progress: ProgressDisplay): Promise<{ seeded: number; changed: number }> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const employees = `${quoteIdent(plan.publishSchema)}.${quoteIdent(PUBLISH_TABLES.employee)}`;
    const { rows } = await client.query("SELECT to_regclass($1) IS NOT NULL AS present", [`${plan.publishSchema}.${PUBLISH_TABLES.employee}`]);
    const count = rows[0].present ? Number((await client.query(`SELECT count(*) AS n FROM ${employees}`)).rows[0].n) : 0;
    const platRegions = plan.config.platTenants.map((t) => t.platRegion);
    if (count === 0) {
      progress.step(`seeding ${options.employees.toLocaleString("en-US")} sample employees in ${plan.config.publishSchema}`);
      const result = await seedSampleEmployees(client, { schema: plan.publishSchema, count: options.employees, seed: options.seed, platRegions });
      return { seeded: result.employees, changed: 0 };
    }
    progress.step(`changing ${options.changes} of ${count.toLocaleString("en-US")} employees for an incremental export`);
    const changed = await touchEmployees(client, { schema: plan.publishSchema, count: options.changes, seed: Date.now() % 2_147_483_647 });
    return { seeded: 0, changed: changed.length };
  } finally {
    await client.end();
  }
}

async function summarize(input: {
  plan: InstallationPlan;
  paths: LocalPaths;
  emulator: Emulator;
  databaseUrl: string;
  port: number;
  run: TaskRunResult;
  firstRun: boolean;
  seeded: number;
  changed: number;
  definition: string;
  scripts: string;
  clsSheet: string;
  taskLog: string;
  started: number;
}): Promise<LocalSummary> {
  const { plan, emulator } = input;
  const config = plan.config;
  const client = new Client({ connectionString: input.databaseUrl });
  await client.connect();
  let intakeJob: IntakeJobRow | null = null;
  try {
    const jobs = await latestIntakeJobs(client, plan.stagingSchema, config.jobName, 1);
    intakeJob = jobs.find((j) => j.transactionId === input.run.transactionId) ?? (input.run.transactionId ? null : jobs[0] ?? null);
  } finally {
    await client.end();
  }
  const state = emulator.state();
  const regions: LocalSummary["regions"] = {};
  for (const region of HUB_REGIONS) {
    const queue = config.queues[region];
    if (!queue) continue;
    const d = state.queues[region].destinations[queue.queueName];
    regions[region] = { destination: queue.connectionName, queueName: queue.queueName, messages: d?.count ?? 0, duplicates: d?.duplicates ?? 0, rejected: d?.rejected ?? 0 };
  }
  const tables = plan.tables;
  const transaction = input.run.transactionId ?? intakeJob?.transactionId ?? null;
  return {
    jobName: config.jobName,
    transactionId: transaction,
    status: runStatus(input.run, intakeJob),
    exitCode: input.run.exitCode,
    firstRun: input.firstRun,
    seeded: input.seeded,
    changed: input.changed,
    intakeJob,
    regions,
    ers: Object.fromEntries(Object.entries(state.ers).map(([t, e]) => [t, { requests: e.requests, entities: e.entities }])),
    routingRules: Object.fromEntries(Object.entries(state.routingRules).map(([t, r]) => [t, r.rules.length])),
    files: {
      root: input.paths.root,
      bucket: input.paths.bucket,
      definition: input.definition,
      scripts: input.scripts,
      clsSheet: input.clsSheet,
      connections: input.paths.connections,
      postgres: input.paths.postgres,
      taskLog: input.taskLog,
    },
    database: { url: redactUrl(input.databaseUrl), stagingSchema: plan.stagingSchema, ...psqlAccess(input.paths, config.database.connectionName, input.port) },
    metrics: input.run.metrics,
    hub: { cfg: emulator.urls.cfg, ers: emulator.urls.ers, hrsys: emulator.urls.hrsys, state: emulator.urls.state, queues: emulator.urls.queues },
    queries: {
      intakeJob: plan.intakeJobQuery,
      statuses: `SELECT status, count(*) FROM ${plan.stagingSchema}.${tables.status} WHERE transaction_id = '${transaction ?? "<transaction id>"}' GROUP BY status;`,
      statusCommand: `npx hub-export status --job-name ${config.jobName}${transaction ? ` --transaction ${transaction}` : ""}`,
    },
    seconds: Math.round((Date.now() - input.started) / 100) / 10,
  };
}

/**
 * How to reach the local database with psql as the task's login: its URL without the password, the connection record
 * that holds the password, and a command that reads it from there (no password on screen or in shell history).
 */
export function psqlAccess(paths: LocalPaths, connectionName: string, port: number): { psqlUrl: string; passwordFile: string; psql: string } {
  const url = new URL(localDatabaseUrl(paths.connections, port));
  url.password = "";
  const passwordFile = path.join(paths.connections, connectionFileName(connectionName));
  const psqlUrl = url.toString();
  return { psqlUrl, passwordFile, psql: `PGPASSWORD="$(node -p 'require(${JSON.stringify(passwordFile)}).password')" psql '${psqlUrl}'` };
}

/** A database URL without its password, for people to read. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "****";
  return u.toString();
}
