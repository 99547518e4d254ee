/** A database, an emulator and a provisioned test platform for one test file of the export task. */
import fs from "node:fs";
import { Client, Pool } from "pg";
import { createTestDatabase } from "./database";
import { runCli, type CliResult } from "./cli";
import { fixtureStackFile } from "../fixtures/stacks";
import {
  JOB_NAME,
  QUEUES,
  emulatorConfig,
  provisionPlatform,
  type HubUrls,
  type PlatformOptions,
  type TestPlatform,
} from "../../bench/platform";
import {
  startEmulator,
  type Emulator,
  type EmulatorConfigInput,
  type EmulatorState,
  type LinkInput,
} from "../../emulator";
import { SAMPLE_LOADER_ROLE, seedSampleEmployees } from "../../task/model/sampleData";
import type { StackConfig } from "../../config/schema";
import { completedRuns } from "../../operate/status";

export interface ExportFixture {
  db: { url: string; drop(): Promise<void> };
  pool: Pool;
  emulator: Emulator;
  platform: TestPlatform;
  /** Tables, schema-qualified. */
  t: {
    messages: string;
    archive: string;
    status: string;
    intakeJob: string;
    completedRuns: string;
    runHistory: string;
    watermark: string;
    run: string;
    runPart: string;
  };
  count(table: string, where?: string): Promise<number>;
  close(): Promise<void>;
}

export interface FixtureOptions {
  employees?: number;
  seed?: number;
  emulator?: Partial<EmulatorConfigInput>;
  /** The emulator plays a remote hub: latency and rate limits (emulator/link.ts). */
  link?: LinkInput;
  parameters?: Partial<StackConfig["parameters"]>;
  /** Puts something (a recording proxy) between the task and the emulator. */
  hub?: (emulator: Emulator) => Promise<HubUrls>;
  /** Regional hub environments and extra platform tenants of the platform. */
  platform?: Pick<PlatformOptions, "regionalHubs" | "extraPlatRegions">;
  /** Platform regions of the seeded employees (default US, EU, APAC). */
  platRegions?: string[];
  /** The superuser URL of a server of the test's own (one it restarts); default: the run's shared server. */
  adminUrl?: string;
}

export async function exportFixture(options: FixtureOptions = {}): Promise<ExportFixture> {
  const db = await createTestDatabase("task", options.adminUrl);
  const emulator = await startEmulator({ config: emulatorConfig(options.emulator), link: options.link });
  const platform = await provisionPlatform({
    databaseUrl: db.url,
    hub: options.hub ? await options.hub(emulator) : emulator.urls,
    parameters: options.parameters,
    ...options.platform,
  });
  const pool = new Pool({ connectionString: db.url, max: 4 });
  // An idle session lost (a test restarts the server or ends sessions) is replaced at the next query.
  pool.on("error", () => {});
  if (options.employees) {
    await seedSampleEmployees(pool, {
      schema: platform.publishSchema,
      // The HR loader's, as the platform's are: the task (the admin login) reads them as its member.
      loaderRole: SAMPLE_LOADER_ROLE,
      count: options.employees,
      seed: options.seed ?? 1,
      platRegions: options.platRegions ?? ["US", "EU", "APAC"],
    });
  }
  const s = platform.stagingSchema;
  const t = {
    messages: `${s}.HUB_ACME_MESSAGES`,
    archive: `${s}.HUB_ACME_MESSAGES_ARCHIVE`,
    status: `${s}.HUB_ACME_MESSAGES_STATUS`,
    intakeJob: `${s}.HUB_INTAKE_JOB`,
    /** HUB_INTAKE_JOB rows with their run's details (status, counts, finished_at) from the run history. */
    completedRuns: completedRuns(s),
    runHistory: `${s}.HUB_EXPORT_RUN_HISTORY`,
    watermark: `${s}.HUB_EXPORT_WATERMARK`,
    run: `${s}.HUB_EXPORT_RUN`,
    runPart: `${s}.HUB_EXPORT_RUN_PART`,
  };
  return {
    db,
    pool,
    emulator,
    platform,
    t,
    async count(table, where = "true") {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`);
      return rows[0].n;
    },
    async close() {
      await pool.end();
      await emulator.close();
      await db.drop();
      fs.rmSync(platform.dir, { recursive: true, force: true });
    },
  };
}

/** Employees of the publish schema in the regions that have a tenant (US, EU). */
export async function employeesInScope(pool: Pool | Client, schema: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema}.employee WHERE plat_region IN ('US', 'EU')`,
  );
  return rows[0].n;
}

/** A message the broker holds (with `state({ messages: true })`). */
export type BrokerMessage = NonNullable<EmulatorState["queues"]["US"]["destinations"][string]["messages"]>[number];

/** Every message the emulator's US and EU queues hold now (read from `f.emulator` at each call: a test may restart it). */
export function storedMessages(f: ExportFixture): BrokerMessage[] {
  const s = f.emulator.state({ messages: true });
  return [
    ...(s.queues.US.destinations[QUEUES.US.queueName]?.messages ?? []),
    ...(s.queues.EU.destinations[QUEUES.EU.queueName]?.messages ?? []),
  ];
}

/** The first `n` employee ids of a platform region of the publish schema, in id order. */
export async function employeeIds(f: ExportFixture, n: number, region = "US"): Promise<string[]> {
  const { rows } = await f.pool.query<{ employee_id: string }>(
    `SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region = $1 ORDER BY 1 LIMIT $2`,
    [region, n],
  );
  return rows.map((r) => r.employee_id);
}

/** Distinct employees of the messages archived (_ARCHIVE), of one transaction if given. */
export async function archivedEmployees(f: ExportFixture, transactionId?: string): Promise<number> {
  const { rows } =
    transactionId === undefined
      ? await f.pool.query<{ n: number }>(
          `SELECT count(DISTINCT e)::int AS n FROM ${f.t.archive}, unnest(employee_ids) e`,
        )
      : await f.pool.query<{ n: number }>(
          `SELECT count(DISTINCT e)::int AS n FROM ${f.t.archive}, unnest(employee_ids) e WHERE transaction_id = $1`,
          [transactionId],
        );
  return rows[0].n;
}

export interface HistoryRow {
  event: string;
  transaction_id: string | null;
  detail: Record<string, unknown>;
}

/** The last row of HUB_EXPORT_RUN_HISTORY (its event, transaction id and detail). */
export async function lastHistory(f: ExportFixture): Promise<HistoryRow> {
  const { rows } = await f.pool.query<HistoryRow>(
    `SELECT event, transaction_id, detail FROM ${f.t.runHistory} ORDER BY history_id DESC LIMIT 1`,
  );
  return rows[0];
}

/** `hub-export status` of the test job in the fixture's database (the qa fixture stack), with `extra` options. */
export function statusOf(f: ExportFixture, ...extra: string[]): Promise<CliResult> {
  return runCli([
    "status",
    "--file",
    fixtureStackFile("qa"),
    "--job-name",
    JOB_NAME,
    "--database-url",
    f.db.url,
    ...extra,
  ]);
}
