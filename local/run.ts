/**
 * The embedded default (`npm start` = `hub-export local`): embedded PostgreSQL and the hub emulator on loopback, the
 * local platform provisioned from a stack config with the same installation and providers as `pulumi up`, sample employees,
 * and one run of the export task exactly as the container runs it: the bundle, in a child process.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { loadScriptsRelease, loadStackConfig, readStackFile, stackFilePath } from "../config/load";
import { validateStackConfig } from "../config/validate";
import { stripPlaceholders } from "../config/placeholders";
import { installationOf, type Installation } from "../core/installation";
import { BUCKET_FOLDERS, HUB_CONFIGURATION_FILES, hubConfigurationFolder } from "../core/naming";
import { hubChecklist } from "../core/hubChecklist";
import { hubConfigurationFiles } from "../core/hubConfiguration";
import { sheetsFromValues } from "../config/clsSheets";
import { writeHubConfiguration } from "./stores";
import { HUB_REGIONS } from "../core/regions";
import { loadPipelineTemplate, loadSqlSources } from "../templates";
import { startEmulator, type Emulator, type FaultRules } from "../emulator";
import { startEmbeddedPostgres } from "./embeddedPostgres";
import { localPaths, ownStateFolders, type LocalPaths } from "./paths";
import { localSecrets } from "./secrets";
import { localOverrides } from "./overrides";
import { applyInstallation } from "./install";
import { PLATFORM_DATABASE_OWNER, standInForDba } from "./warehouseDba";
import { createProgress, type ProgressDisplay } from "./progress";
import { ensureTaskBundle, runTaskBundle, type TaskRunResult } from "./taskProcess";
import { CONCURRENCY_ENV } from "../core/concurrency";
import { latestIntakeJobs, latestOutcome, type IntakeJobRow, type RunOutcome } from "../operate/status";
import { recordRefusal } from "./status";
import { removedParts, runStatus, type LocalSummary } from "./summary";
import {
  SAMPLE_BUSINESS_OBJECTS,
  SAMPLE_LOADER_ROLE,
  seedSampleEmployees,
  touchEmployees,
} from "../task/model/sampleData";
import { PUBLISH_TABLES } from "../task/model/schema";
import { quoteIdent } from "../providers/pg";
import { untilStopSignal } from "./signals";
import { localDatabaseUrl } from "./database";
import { Interrupts } from "./interrupt";
import { STOP_GRACE_ENV, STOP_GRACE_SECONDS } from "../core/runDeadline";
import { connectionFileName, stagingNamesNote } from "../core/naming";

export interface LocalOptions {
  stack?: string;
  file?: string;
  /** Sample employees seeded on the first start. */
  employees: number;
  /** Employees changed before a later start's incremental export. */
  changes: number;
  /** The sample changes give job profiles codes the CLS sheet lacks, to show the unknown-code check. */
  changesWithUnknownCodes?: boolean;
  seed: number;
  /** Faults the hub emulator injects (emulator/faults.ts); none by default. */
  hubFaults?: FaultRules;
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

export async function runLocal(options: LocalOptions): Promise<LocalSummary> {
  const started = Date.now();
  const paths = localPaths(options.root);
  const progress = createProgress(options.stderr);
  // The stack file first: a bad --stack or --file is reported before anything starts.
  loadStackConfig({ file: options.file, stack: options.file ? options.stack : (options.stack ?? "qa") });
  const file = options.file ?? stackFilePath(options.stack ?? "qa");
  // Local mode runs on the stack file's examples: the PLACEHOLDER: values stand for what the embedded default provides.
  const raw = stripPlaceholders(readStackFile(file)).value;
  const tenants = (raw.hubTenants as { hubTenantId: string; clientId: string }[] | undefined) ?? [];
  const queues = (raw.queues as Record<string, { clientAccessId: string; queueName: string }> | undefined) ?? {};

  // The state folder holds secrets: ours alone (local/paths.ts). Where the postgres user cannot enter it, the server
  // runs in a user namespace (local/postgres/serverUser.ts).
  ownStateFolders(paths, (line) => progress.step(line));

  progress.step(`embedded PostgreSQL (${path.relative(process.cwd(), paths.postgres) || paths.postgres})`);
  const firstRun = !fs.existsSync(path.join(paths.postgres, "PG_VERSION"));
  let emulator: Emulator | undefined;
  let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  const stopAll = async () => {
    await emulator?.close().catch(() => {});
    await pg?.stop().catch(() => {});
  };
  // Ctrl-C and SIGTERM: the task stops cleanly, then the emulator and PostgreSQL (local/interrupt.ts).
  const graceSeconds = Number(process.env[STOP_GRACE_ENV]) || STOP_GRACE_SECONDS;
  const interrupts = new Interrupts({ graceSeconds, notify: (line) => progress.step(line), stopAll });
  try {
    pg = await startEmbeddedPostgres({
      dataDir: paths.postgres,
      persistent: true,
      owner: `hub-export local${options.keep ? " --keep" : ""}`,
    });
    interrupts.throwIfInterrupted("provisioning");
    const secrets = localSecrets(
      paths.secrets,
      Object.keys(queues),
      tenants.map((t) => t.hubTenantId),
    );

    progress.step("hub and queue emulator");
    emulator = await startEmulator({
      faults: { rules: options.hubFaults ?? {} },
      config: {
        queues: Object.fromEntries(
          Object.entries(queues).map(([region, q]) => [
            region,
            {
              clientId: q.clientAccessId,
              clientSecret: secrets.queues[region],
              orgId: `local-org-${region.toLowerCase()}`,
              envId: "local",
            },
          ]),
        ),
        tenants: Object.fromEntries(
          tenants.map((t) => [t.hubTenantId, { clientId: t.clientId, clientSecret: secrets.tenants[t.hubTenantId] }]),
        ),
      },
    });
    const endpoints = {
      database: { host: "127.0.0.1", port: pg.port },
      hubApis: { ERS: emulator.urls.ers, CFG: emulator.urls.cfg, HRSYS: emulator.urls.hrsys },
      queues: emulator.urls.queues,
    };
    const config = validateStackConfig(localOverrides(raw, endpoints, secrets), {
      source: `${file} (local overrides)`,
      stack: "local",
    });
    const installation = installationOf(config, { template: loadPipelineTemplate(), ...loadSqlSources() });

    // The platform's part, the embedded server's superuser standing in for the warehouse's DBA: the database, the
    // publish schema filled by the HR loader, the admin login and what `probe --warehouse` says it lacks.
    let employees: Awaited<ReturnType<typeof prepareEmployees>> | undefined;
    await standInForDba({
      superuserUrl: pg.adminUrl,
      database: config.database.database,
      owner: PLATFORM_DATABASE_OWNER,
      admin: { username: config.database.admin.username, password: secrets.adminPassword },
      loaders: config.database.publishTableOwners,
      scope: {
        publishSchema: installation.publishSchema,
        stagingSchema: installation.stagingSchema,
        publishTableOwners: config.database.publishTableOwners,
        taskRole: config.database.task.username,
      },
      fillPublish: async (url) => {
        employees = await prepareEmployees(installation, url, options, progress);
      },
    });

    progress.step(`provisioning the local platform for ${config.clientName} (${installation.regions.join(", ")})`);
    const provisioned = await applyInstallation(installation, paths, {
      release: config.scriptsRelease ? await loadScriptsRelease(config.scriptsRelease.zip) : undefined,
    });
    // The hub side without an API: the CLS load sheets, built from the sample data's business objects, and the checklist.
    const cls = await sheetsFromValues(SAMPLE_BUSINESS_OBJECTS, "the sample data's business objects");
    writeHubConfiguration(
      paths.bucket,
      hubConfigurationFiles({
        jobName: config.jobName,
        checklist: hubChecklist(config, "local", { rows: cls.sheet.rows.length }),
        cls,
      }),
    );
    const clsSheet = path.join(paths.bucket, hubConfigurationFolder(config.jobName), HUB_CONFIGURATION_FILES.clsCsv);
    const clsMode = config.cls?.strict ? "strict" : "report";

    const removed = removedParts(provisioned.removed);
    if (removed.length) progress.step(`removed what the stack config no longer has: ${removed.join("; ")}`);

    progress.step("building the export task bundle");
    const bundle = await ensureTaskBundle();
    interrupts.throwIfInterrupted("the export run");
    const definition = path.join(paths.bucket, installation.definitionKey);
    const scripts = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
    const taskLog = path.join(paths.logs, `task-${new Date().toISOString().replace(/[:.]/g, "-")}.log`);

    progress.step(`running the export task: ${config.jobName}`);
    // The stack's concurrency reaches the task as it does in the container (components/task/exportTask.ts).
    const env = { [CONCURRENCY_ENV]: JSON.stringify(config.concurrency) };
    const args = [
      "run",
      "--definition",
      definition,
      "--scripts",
      scripts,
      "--connections",
      paths.connections,
      "--cls",
      clsSheet,
      "--cls-mode",
      clsMode,
    ];
    const run = await runTaskBundle({ bundle, args, logFile: taskLog, progress, env, interrupts });
    progress.close();

    const { intakeJob, outcome } = await runRecord(provisioned.databaseUrl, installation, run);
    const state = emulator.state();
    const regions: LocalSummary["regions"] = {};
    for (const region of HUB_REGIONS) {
      const queue = config.queues[region];
      if (!queue) continue;
      const d = state.queues[region].destinations[queue.queueName];
      regions[region] = {
        destination: queue.connectionName,
        queueName: queue.queueName,
        messages: d?.count ?? 0,
        duplicates: d?.duplicates ?? 0,
        rejected: d?.rejected ?? 0,
      };
    }
    const transaction = run.transactionId;
    const status = runStatus(run, intakeJob);
    const summary: LocalSummary = {
      jobName: config.jobName,
      transactionId: transaction,
      status,
      reason: status === "ExecutionCompleted" ? null : (outcome?.reason ?? run.reason ?? run.error ?? null),
      counts: intakeJob?.counts ?? outcome?.counts ?? null,
      countsSoFar: !intakeJob?.counts && (outcome?.countsSoFar ?? false),
      resumed: run.resumed,
      unrecorded: run.unrecorded,
      exitCode: run.exitCode,
      interrupted: run.finalEvent === "run.done" ? null : run.interrupted,
      firstRun,
      ...employees!,
      intakeJob,
      regions,
      ers: Object.fromEntries(
        Object.entries(state.ers).map(([t, e]) => [t, { requests: e.requests, entities: e.entities }]),
      ),
      routingRules: Object.fromEntries(Object.entries(state.routingRules).map(([t, r]) => [t, r.rules.length])),
      removed: provisioned.removed,
      changes: intakeJob?.changes ?? outcome?.changes ?? null,
      hubTenantCodes: Object.fromEntries(config.hubTenants.map((t) => [t.hubTenantId, t.hubTenantCode])),
      files: {
        root: paths.root,
        bucket: paths.bucket,
        definition,
        scripts,
        clsSheet,
        connections: paths.connections,
        postgres: paths.postgres,
        taskLog,
      },
      database: {
        url: redactUrl(provisioned.databaseUrl),
        stagingSchema: installation.stagingSchema,
        ...psqlAccess(paths, config.database.connectionName, pg.port, options.keep),
      },
      metrics: run.metrics,
      hub: {
        cfg: emulator.urls.cfg,
        ers: emulator.urls.ers,
        hrsys: emulator.urls.hrsys,
        state: emulator.urls.state,
        queues: emulator.urls.queues,
      },
      queries: {
        intakeJob: installation.intakeJobQuery,
        statuses: `SELECT status, count(*) FROM ${installation.stagingSchema}.${installation.tables.status} WHERE transaction_id = '${transaction ?? "<transaction id>"}' GROUP BY status; ${stagingNamesNote(config.stagingSchema)}`,
        statusCommand: `npx hub-export status${statusOptions(options)}${transaction ? ` --transaction ${transaction}` : ""}`,
      },
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
    // An interrupted run is not kept running: the emulator and PostgreSQL stop now.
    if (options.keep && !run.interrupted) {
      interrupts.dispose();
      options.onSummary?.(summary);
      options.stderr.write(
        `\nKeeping the database and the emulator running until Ctrl-C:\n  database  ${summary.database.psqlUrl}  (password: field "password" of ${summary.database.passwordFile})\n  psql      ${summary.database.psql}\n  emulator  ${emulator.urls.state}\n`,
      );
      await (options.untilStopped ?? untilStopSignal)();
    }
    return summary;
  } finally {
    await stopAll();
    interrupts.dispose();
  }
}

/**
 * First start: seed the sample employees. Later starts: seed platform regions that have none yet (added to the stack
 * config since), and change some employees, so the export is incremental.
 */
async function prepareEmployees(
  installation: Installation,
  databaseUrl: string,
  options: LocalOptions,
  progress: ProgressDisplay,
): Promise<{ seeded: number; changed: number; seededRegions: string[] }> {
  const client = new Client({ connectionString: databaseUrl });
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  await client.connect();
  try {
    const employees = `${quoteIdent(installation.publishSchema)}.${quoteIdent(PUBLISH_TABLES.employee)}`;
    const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [
      `${installation.publishSchema}.${PUBLISH_TABLES.employee}`,
    ]);
    const count = rows[0].present
      ? Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${employees}`)).rows[0].n)
      : 0;
    const platRegions = installation.config.platTenants.map((t) => t.platRegion);
    if (count === 0) {
      progress.step(
        `seeding ${options.employees.toLocaleString("en-US")} sample employees in ${installation.config.publishSchema}`,
      );
      const result = await seedSampleEmployees(client, {
        schema: installation.publishSchema,
        count: options.employees,
        seed: options.seed,
        platRegions,
        loaderRole: SAMPLE_LOADER_ROLE,
      });
      return { seeded: result.employees, changed: 0, seededRegions: platRegions };
    }
    const { rows: present } = await client.query<{ plat_region: string }>(
      `SELECT DISTINCT plat_region FROM ${employees}`,
    );
    const newRegions = platRegions.filter((r) => !present.some((p) => p.plat_region === r));
    let seeded = 0;
    if (newRegions.length) {
      // Its even share of --employees over the platform regions; numbered after the last employee.
      const perRegion = Math.max(1, Math.ceil(options.employees / platRegions.length));
      const { rows: last } = await client.query<{ n: string | null }>(
        `SELECT max(substr(employee_id, 2)::bigint) AS n FROM ${employees} WHERE employee_id ~ '^E[0-9]{9}$'`,
      );
      progress.step(
        `seeding ${(perRegion * newRegions.length).toLocaleString("en-US")} sample employees for the new platform region(s) ${newRegions.join(", ")}`,
      );
      const result = await seedSampleEmployees(client, {
        schema: installation.publishSchema,
        count: perRegion * newRegions.length,
        seed: options.seed,
        platRegions: newRegions,
        firstEmployee: Number(last[0].n ?? 0) + 1,
        loaderRole: SAMPLE_LOADER_ROLE,
      });
      seeded = result.employees;
    }
    progress.step(
      `changing ${options.changes} of ${count.toLocaleString("en-US")} employees for an incremental export`,
    );
    const changed = await touchEmployees(client, {
      schema: installation.publishSchema,
      count: options.changes,
      seed: Date.now() % 2_147_483_647,
      unknownCodes: options.changesWithUnknownCodes,
    });
    return { seeded, changed: changed.length, seededRegions: newRegions };
  } finally {
    await client.end();
  }
}

/**
 * The options `status` needs to read what this start did: its stack (qa is the default) and its state folder, which
 * is named whenever the stack is (with --stack or --file alone, status reads that stack's own warehouse).
 */
function statusOptions(options: Pick<LocalOptions, "stack" | "file" | "root">): string {
  const quote = (v: string) => (/^[\w./:=@-]+$/.test(v) ? v : `'${v.replace(/'/g, "'\\''")}'`);
  const stack = options.file
    ? ["--file", path.relative(process.cwd(), options.file) || options.file]
    : options.stack && options.stack !== "qa"
      ? ["--stack", options.stack]
      : [];
  const root = options.root ?? (stack.length ? localPaths().root : undefined);
  const args = [...stack, ...(root ? ["--dir", path.relative(process.cwd(), root) || root] : [])];
  return args
    .map(quote)
    .map((a) => ` ${a}`)
    .join("");
}

/**
 * This run's own rows of the run tables: none for a run refused before it opened a transaction (never the previous
 * run's), whose refusal is recorded here instead, so that 'status' says why as the summary does.
 */
async function runRecord(
  databaseUrl: string,
  installation: Installation,
  run: TaskRunResult,
): Promise<{ intakeJob: IntakeJobRow | null; outcome: RunOutcome | null }> {
  const { stagingSchema, config } = installation;
  const transaction = run.transactionId;
  const client = new Client({ connectionString: databaseUrl });
  client.on("error", () => {}); // a lost connection fails the next statement; unheard, it would crash the process
  await client.connect();
  try {
    if (transaction) {
      const jobs = await latestIntakeJobs(client, stagingSchema, config.jobName, 1);
      return {
        intakeJob: jobs.find((j) => j.transactionId === transaction) ?? null,
        outcome: await latestOutcome(client, stagingSchema, config.jobName, transaction),
      };
    }
    if (run.finalEvent === "run.refused" && run.reason)
      await recordRefusal(client, stagingSchema, config.clientName, config.jobName, run.reason);
    return { intakeJob: null, outcome: null };
  } finally {
    await client.end();
  }
}

/**
 * How to reach the local database with psql as the task's login: its URL without the password, the connection record
 * that holds the password, and a command that reads it from there (no password on screen or in shell history).
 */
export function psqlAccess(
  paths: LocalPaths,
  connectionName: string,
  port: number,
  running = true,
): { psqlUrl: string | null; passwordFile: string; psql: string | null } {
  const passwordFile = path.join(paths.connections, connectionFileName(connectionName));
  if (!running) return { psqlUrl: null, passwordFile, psql: null };
  const url = new URL(localDatabaseUrl(paths.connections, port));
  url.password = "";
  const psqlUrl = url.toString();
  return {
    psqlUrl,
    passwordFile,
    psql: `PGPASSWORD="$(node -p 'require(${JSON.stringify(passwordFile)}).password')" psql '${psqlUrl}'`,
  };
}

/** A database URL without its password, for people to read. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "****";
  return u.toString();
}
