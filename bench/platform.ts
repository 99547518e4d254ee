/**
 * A test platform for the export task, installed from its plan as local mode installs it: the rendered common baseline
 * and the client's run tables, the config rows, connection files, the scripts folder and the rendered definition, all
 * pointing at an embedded PostgreSQL database and an emulator on loopback.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { validateStackConfig } from "../config/validate";
import type { StackConfig } from "../config/schema";
import { installationOf, type Installation } from "../core/installation";
import { loadPipelineTemplate, loadSqlSources } from "../templates";
import { BUCKET_FOLDERS } from "../core/naming";
import type { EmulatorConfigInput, EmulatorUrls } from "../emulator";
import { applyInstallation } from "../local/install";
import { loginUrl, standInForDba } from "../local/warehouseDba";
import { PLATFORM_ROLES } from "./platformRoles";
import { startEmbeddedPostgres } from "../local/embeddedPostgres";
import { PARAMETER_DEFAULTS } from "../core/parameters";
import { localPaths } from "../local/paths";

export const TENANTS = {
  US: {
    hubTenantId: "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c",
    clientId: "acme-us-test",
    clientSecret: "tenant-us-S3cr3t!x9",
  },
  EU: {
    hubTenantId: "7a2d4f6b-8c1e-4a3b-b5d7-9e0f2a4c6e8b",
    clientId: "acme-eu-test",
    clientSecret: "tenant-eu-S3cr3t!y7",
  },
} as const;
export const QUEUES = {
  US: {
    clientId: "mq-us-client-test",
    clientSecret: "mq-us-S3cr3t!q1",
    orgId: "org-us",
    envId: "env-us",
    queueName: "acme-empl-us",
  },
  EU: {
    clientId: "mq-eu-client-test",
    clientSecret: "mq-eu-S3cr3t!q2",
    orgId: "org-eu",
    envId: "env-eu",
    queueName: "acme-empl-eu",
  },
} as const;
export const CLIENT_NAME = "ACME";
export const JOB_NAME = "HRSYS_EMPL_HUB_ACME_202611_TEST";

/** The emulator's side of the test platform: the same credentials the platform is configured with. */
export function emulatorConfig(extra: Partial<EmulatorConfigInput> = {}): EmulatorConfigInput {
  return {
    queues: Object.fromEntries(
      Object.entries(QUEUES).map(([r, q]) => [
        r,
        { clientId: q.clientId, clientSecret: q.clientSecret, orgId: q.orgId, envId: q.envId },
      ]),
    ),
    tenants: Object.fromEntries(
      Object.values(TENANTS).map((t) => [t.hubTenantId, { clientId: t.clientId, clientSecret: t.clientSecret }]),
    ),
    ...extra,
  };
}

export interface HubUrls {
  queues: Record<"US" | "EU" | "APAC", string>;
  cfg: string;
  ers: string;
  hrsys: string;
}

export interface TestPlatform {
  dir: string;
  /** The admin login's URL of the database (PLATFORM_ROLES.admin): the login that provisions, and the task's. */
  adminUrl: string;
  config: StackConfig;
  installation: Installation;
  definitionFile: string;
  scriptsDir: string;
  connectionsDir: string;
  publishSchema: string;
  stagingSchema: string;
  /** `run --definition ... --scripts ... --connections ...` */
  args: string[];
  /** Every secret of the platform, for leak checks. */
  secrets: string[];
}

export interface PlatformOptions {
  /** A superuser URL of the database: the platform's DBA (bench/platformRoles.ts). */
  databaseUrl: string;
  hub: HubUrls;
  /** A hub region's own ERS, CFG and HRSYS URLs (another emulator), instead of `hub`'s. */
  regionalHubs?: Partial<Record<"US" | "EU", Pick<HubUrls, "cfg" | "ers" | "hrsys">>>;
  /** Extra platform tenants: platform region → the hub region whose hub tenant they feed. */
  extraPlatRegions?: Record<string, "US" | "EU">;
  parameters?: Partial<StackConfig["parameters"]>;
  dir?: string;
}

type ConfigOptions = Pick<PlatformOptions, "parameters" | "regionalHubs" | "extraPlatRegions">;

export function stackConfigFor(databaseUrl: string, hub: HubUrls, options: ConfigOptions = {}): StackConfig {
  return validateStackConfig(rawStackConfigFor(databaseUrl, hub, options), { source: "test platform", stack: "test" });
}

/** The test platform's stack config as the stack file holds it (values not validated yet). */
export function rawStackConfigFor(
  databaseUrl: string,
  hub: HubUrls,
  options: ConfigOptions = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a raw stack config, which tests edit freely
): Record<string, any> {
  const db = new URL(databaseUrl);
  const database = db.pathname.slice(1);
  const password = decodeURIComponent(db.password);
  return {
    environment: "TEST",
    clientName: CLIENT_NAME,
    jobName: JOB_NAME,
    publishSchema: `${database}.publish`,
    stagingSchema: `${database}.staging`,
    parameters: { ...PARAMETER_DEFAULTS, ...options.parameters },
    bucket: { name: "acme-platform-test", create: false, connectionName: "PLAT_S3_TEST" },
    database: {
      connectionName: "PLAT_WAREHOUSE_TEST",
      host: db.hostname,
      port: Number(db.port),
      database,
      sslMode: "disable",
      admin: { username: decodeURIComponent(db.username), password },
      task: { username: decodeURIComponent(db.username), password },
    },
    connectionStore: { prefix: "acme/test" },
    hub: {
      default: { environmentName: "hub-test", apis: { ERS: hub.ers, CFG: hub.cfg, HRSYS: hub.hrsys } },
      regions: Object.fromEntries(
        Object.entries(options.regionalHubs ?? {}).map(([r, h]) => [
          r,
          { environmentName: `hub-test-${r.toLowerCase()}`, apis: { ERS: h.ers, CFG: h.cfg, HRSYS: h.hrsys } },
        ]),
      ),
      allowLoopback: true,
    },
    queues: Object.fromEntries(
      (["US", "EU"] as const).map((r) => [
        r,
        {
          connectionName: `HUB_MQ_${r}_TEST`,
          baseUrl: hub.queues[r],
          queueName: QUEUES[r].queueName,
          clientAccessId: QUEUES[r].clientId,
          clientSecret: QUEUES[r].clientSecret,
        },
      ]),
    ),
    hubTenants: (["US", "EU"] as const).map((r) => ({
      hubTenantId: TENANTS[r].hubTenantId,
      hubTenantCode: `ACME_${r}_TEST`,
      hubRegion: r,
      clientId: TENANTS[r].clientId,
      clientSecret: TENANTS[r].clientSecret,
    })),
    platTenants: [["US", "US"], ["EU", "EU"], ...Object.entries(options.extraPlatRegions ?? {})].map(
      ([platRegion, r]) => ({
        platRegion,
        codebase: r,
        gblOrUs: r === "US" ? "US" : "GBL",
        hubTenantCode: `ACME_${r}_TEST`,
      }),
    ),
    schedule: { expression: "rate(1 day)" },
    network: { subnetIds: ["subnet-0test"], securityGroupIds: ["sg-0test"] },
  };
}

/** A raw stack config in engine form, as `pulumi up` hands it to the program: `hubExport:<key>` → text or JSON. */
export function engineConfigOf(raw: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(raw).map(([key, value]) => [
      `hubExport:${key}`,
      typeof value === "string" ? value : JSON.stringify(value),
    ]),
  );
}

/**
 * The platform installed as local mode installs it (local/install.ts), in `dir` (its bucket, connections and
 * deployment record): the DBA's part as the superuser (local/warehouseDba.ts), then provisioning as the admin login,
 * which the task logs in as too. The test's hub gets no routing rules (its tests set up the hub themselves). Publish
 * tables a test creates later are the loader's (seed with `loaderRole: SAMPLE_LOADER_ROLE`): the admin reads them.
 */
export async function provisionPlatform(options: PlatformOptions): Promise<TestPlatform> {
  const database = decodeURIComponent(new URL(options.databaseUrl).pathname.slice(1));
  const adminUrl = loginUrl(options.databaseUrl, database, PLATFORM_ROLES.admin);
  const config = stackConfigFor(adminUrl, options.hub, options);
  const installation = installationOf(config, { template: loadPipelineTemplate(), ...loadSqlSources() });
  await standInForDba({
    superuserUrl: options.databaseUrl,
    database,
    ...PLATFORM_ROLES,
    scope: {
      publishSchema: installation.publishSchema,
      stagingSchema: installation.stagingSchema,
      publishTableOwners: config.database.publishTableOwners,
    },
  });
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-platform-"));
  const paths = localPaths(dir);
  await applyInstallation(installation, paths, { routingRules: false });
  const definitionFile = path.join(paths.bucket, installation.definitionKey);
  const scriptsDir = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
  const secrets = [
    ...Object.values(TENANTS).map((t) => t.clientSecret),
    ...Object.values(QUEUES).map((q) => q.clientSecret),
    decodeURIComponent(new URL(options.databaseUrl).password),
    PLATFORM_ROLES.admin.password,
    ...installation.routingRules.map((r) => r.credentialsString.reveal()),
  ];
  return {
    dir,
    adminUrl,
    config,
    installation,
    definitionFile,
    scriptsDir,
    connectionsDir: paths.connections,
    publishSchema: installation.publishSchema,
    stagingSchema: installation.stagingSchema,
    args: ["run", "--definition", definitionFile, "--scripts", scriptsDir, "--connections", paths.connections],
    secrets,
  };
}

const ROOT = path.resolve(__dirname, "..");

export interface BenchPlatform {
  work: string;
  /** The embedded server's data folder (its processes' owner is the server's user). */
  dataDir: string;
  /** The `bench` database, as its superuser (the platform's DBA and HR loader: seed with SAMPLE_LOADER_ROLE). */
  url: string;
  emulator: { child: ChildProcess; urls: EmulatorUrls };
  platform: TestPlatform;
  /** The task bundle: BENCH_TASK_BUNDLE, or built as the image holds it. */
  taskBundle: string;
  /** Stops the emulator and the server, and removes their folders. */
  close: () => Promise<void>;
}

/**
 * A benchmark's platform: embedded PostgreSQL with a `bench` database, the emulator as a child process with each tenant
 * in its region (so ERS requests meet their region's latency, limit and faults), the platform installed there, and the
 * task bundle.
 */
export async function startBenchPlatform(options: {
  settings?: Record<string, string>;
  emulatorArgs: string[];
}): Promise<BenchPlatform> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-"));
  // Its own top-level temporary folder: the server runs as the postgres user, who cannot enter `work`.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-bench-pg-"));
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let emulator: BenchPlatform["emulator"] | undefined;
  const close = async () => {
    emulator?.child.kill("SIGTERM");
    await server?.stop().catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    server = await startEmbeddedPostgres({ dataDir, persistent: false, settings: options.settings });
    // The `bench` database: created by provisionPlatform's DBA stand-in.
    const url = new URL(server.adminUrl);
    url.pathname = "/bench";
    const configFile = path.join(work, "emulator.json");
    const emuConfig = emulatorConfig({ retainBodies: false });
    for (const r of ["US", "EU"] as const) emuConfig.tenants![TENANTS[r].hubTenantId].region = r;
    fs.writeFileSync(configFile, JSON.stringify(emuConfig), { mode: 0o600 });
    emulator = await startEmulatorProcess(configFile, options.emulatorArgs);
    const platform = await provisionPlatform({
      databaseUrl: url.toString(),
      hub: emulator.urls,
      dir: path.join(work, "platform"),
    });
    let taskBundle = process.env.BENCH_TASK_BUNDLE;
    if (!taskBundle) {
      const { buildTask } = require(path.join(ROOT, "scripts", "build-task.js")) as {
        buildTask: (o: { outdir: string }) => Promise<{ outfile: string }>;
      };
      taskBundle = (await buildTask({ outdir: path.join(work, "task") })).outfile;
      // Exactly what the image holds: task/Dockerfile copies index.js alone, without its source map.
      fs.rmSync(`${taskBundle}.map`, { force: true });
    }
    return { work, dataDir, url: url.toString(), emulator, platform, taskBundle, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `hub-export emulator` in a child process (BENCH_EMULATOR_NODE_ARGS: node flags), and the URLs it prints first. */
export async function startEmulatorProcess(configFile: string, extra: string[]): Promise<BenchPlatform["emulator"]> {
  const nodeArgs = (process.env.BENCH_EMULATOR_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      path.join(ROOT, "bin", "hub-export.js"),
      "emulator",
      "--port",
      "0",
      "--config",
      configFile,
      "--json",
      ...extra,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const urls = await new Promise<EmulatorUrls>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    const onExit = (code: number | null) =>
      settle(() => reject(new Error(`the emulator exited with code ${code} before printing its URLs`)));
    const timer = setTimeout(() => settle(() => reject(new Error("the emulator did not start within 30 s"))), 30_000);
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      child.off("exit", onExit);
      lines.close();
      finish();
    };
    child.once("exit", onExit);
    lines.once("line", (line) =>
      settle(() => {
        try {
          resolve((JSON.parse(line) as { urls: EmulatorUrls }).urls);
        } catch {
          reject(new Error(`unexpected first line from the emulator: ${line.slice(0, 200)}`));
        }
      }),
    );
  }).catch((err: unknown) => {
    child.kill("SIGKILL");
    throw err;
  });
  return { child, urls };
}
