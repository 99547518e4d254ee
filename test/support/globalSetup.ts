/**
 * Once per `npm test` run: a temporary folder of the run's own, inside the project (`.tmp/test-<pid>`, ignored by
 * git), which every test process uses as its system temporary folder (TMPDIR), so that nothing a test, a child
 * process or a tool (tsx's cache) writes ends up in the system's; and one embedded PostgreSQL on a free port with its
 * data in that folder; and the export task's bundle, built once for every test that runs it. Teardown removes the
 * folder; a run that was killed has its folder removed by the next run.
 * tsx's transpile cache (`<tmpdir>/tsx-<uid>`, used by the test child processes that run TypeScript through tsx) is a
 * link to `.tmp/tsx-cache`, so that it outlives the run as it would in the system temporary folder.
 */
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";
import { isAlive } from "../../local/postgres/running";
import fs from "node:fs";
import path from "node:path";

export const TEST_TMP_ROOT = path.resolve(__dirname, "..", "..", ".tmp");

let server: EmbeddedServer | undefined;
let runDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  removeStaleRuns();
  runDir = path.join(TEST_TMP_ROOT, `test-${process.pid}`);
  // Searchable, not listable: a server running as the postgres user must reach its data folder in it.
  fs.mkdirSync(runDir, { recursive: true, mode: 0o711 });
  fs.chmodSync(runDir, 0o711);
  const tsxCache = path.join(TEST_TMP_ROOT, "tsx-cache");
  fs.mkdirSync(tsxCache, { recursive: true, mode: 0o700 });
  fs.symlinkSync(tsxCache, path.join(runDir, `tsx-${process.geteuid?.() ?? "user"}`));
  // Read by os.tmpdir() in this process and in every worker and child process started from now on.
  process.env.TMPDIR = runDir;

  const { buildTask } = require("../../scripts/build-task.js") as {
    buildTask: (o: { outdir: string; minify?: boolean }) => Promise<{ outfile: string }>;
  };
  const [started, bundle] = await Promise.all([
    startEmbeddedPostgres({ dataDir: path.join(runDir, "postgres"), persistent: false, owner: "npm test" }),
    buildTask({ outdir: path.join(runDir, "task-bundle"), minify: false }),
  ]);
  server = started;
  project.provide("pgAdminUrl", server.adminUrl);
  project.provide("taskBundle", bundle.outfile);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (runDir) fs.rmSync(runDir, { recursive: true, force: true });
  if (fs.existsSync(TEST_TMP_ROOT) && fs.readdirSync(TEST_TMP_ROOT).length === 0) fs.rmdirSync(TEST_TMP_ROOT);
}

function removeStaleRuns(): void {
  for (const name of fs.existsSync(TEST_TMP_ROOT) ? fs.readdirSync(TEST_TMP_ROOT) : []) {
    // The run's folder, and the copies of the project a test makes next to it (test/components/checkouts.test.ts).
    const pid = Number(/^test-(\d+)(?:-checkouts-.+)?$/.exec(name)?.[1]);
    if (pid && !isAlive(pid)) fs.rmSync(path.join(TEST_TMP_ROOT, name), { recursive: true, force: true });
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
    /** dist/task/index.js as the image runs it, built once for the run (test/support/taskProcess.ts). */
    taskBundle: string;
  }
}
