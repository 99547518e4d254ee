/**
 * The global setup of the projects whose tests need the platform: one embedded PostgreSQL for the run, on a free port
 * with its data in the run's folder (a database per test file on it: test/support/database.ts), and the export task's
 * bundle, built once for every test that runs it (test/support/taskProcess.ts). Shared by the projects of a run.
 */
import type { TestProject } from "vitest/node";
import path from "node:path";
import { startEmbeddedPostgres } from "../../local/embeddedPostgres";
import { ensurePlatformRoles } from "../../local/warehouseDba";
import { PLATFORM_ROLES } from "../../bench/platformRoles";
import { runFolder } from "./runFolder";
import { sharedOnce } from "./sharedOnce";

/**
 * A server for tests: durability off (its data goes with the run), no background vacuum of the hundred databases the
 * run creates and drops (most of its CPU otherwise): what the tests check holds the same.
 */
const TEST_SERVER_SETTINGS = {
  autovacuum: "off",
  full_page_writes: "off",
  wal_level: "minimal",
  max_wal_senders: "0",
};

const platform = sharedOnce(
  "platform",
  async () => {
    const dir = await runFolder.acquire();
    const { buildTask } = require("../../scripts/build-task.js") as {
      buildTask: (o: { outdir: string; minify?: boolean }) => Promise<{ outfile: string }>;
    };
    const [server, bundle] = await Promise.all([
      startEmbeddedPostgres({
        dataDir: path.join(dir, "postgres"),
        persistent: false,
        owner: "npm test",
        settings: TEST_SERVER_SETTINGS,
      }),
      buildTask({ outdir: path.join(dir, "task-bundle"), minify: false }),
    ]);
    // The warehouse's roles, once for the run: each test database is owned by PLATFORM_ROLES.owner (database.ts).
    await ensurePlatformRoles(server.adminUrl, PLATFORM_ROLES);
    return { server, taskBundle: bundle.outfile };
  },
  async ({ server }) => {
    await server.stop();
    await runFolder.release();
  },
);

export async function setup(project: TestProject): Promise<void> {
  const { server, taskBundle } = await platform.acquire();
  project.provide("pgAdminUrl", server.adminUrl);
  project.provide("taskBundle", taskBundle);
}

export const teardown = platform.release;

declare module "vitest" {
  export interface ProvidedContext {
    /** The server's superuser (the platform's DBA): never the login that provisions (bench/platformRoles.ts). */
    pgAdminUrl: string;
    /** dist/task/index.js as the image runs it, built once for the run (test/support/taskProcess.ts). */
    taskBundle: string;
  }
}
