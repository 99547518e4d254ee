/**
 * Every test project's global setup: a temporary folder of the run's own, inside the project (`.tmp/test-<pid>`,
 * ignored by git), which every test process uses as its system temporary folder (TMPDIR), so that nothing a test, a
 * child process or a tool (tsx's cache) writes ends up in the system's. Teardown removes it; a run that was killed has
 * its folder removed by the next run. tsx's transpile cache (`<tmpdir>/tsx-<uid>`) is a link to `.tmp/tsx-cache`, so
 * that it outlives the run as it would in the system temporary folder.
 */
import fs from "node:fs";
import path from "node:path";
import { isAlive } from "../../local/postgres/running";
import { sharedOnce } from "./sharedOnce";

export const TEST_TMP_ROOT = path.resolve(__dirname, "..", "..", ".tmp");

/** The run's folder, made once for all the projects of a run (each project loads this module afresh). */
export const runFolder = sharedOnce(
  "run-folder",
  async () => {
    removeStaleRuns();
    const dir = path.join(TEST_TMP_ROOT, `test-${process.pid}`);
    // Searchable, not listable: a server running as the postgres user must reach its data folder in it.
    fs.mkdirSync(dir, { recursive: true, mode: 0o711 });
    fs.chmodSync(dir, 0o711);
    const tsxCache = path.join(TEST_TMP_ROOT, "tsx-cache");
    fs.mkdirSync(tsxCache, { recursive: true, mode: 0o700 });
    fs.symlinkSync(tsxCache, path.join(dir, `tsx-${process.geteuid?.() ?? "user"}`));
    // Read by os.tmpdir() in this process and in every worker and child process started from now on.
    process.env.TMPDIR = dir;
    // The task's bundle runs on the image's Node.js (22+), which caches its compiled code here: the suite starts it
    // hundreds of times. The image itself runs once per container and has no use for it.
    process.env.NODE_COMPILE_CACHE = path.join(dir, "node-compile-cache");
    return dir;
  },
  async (dir) => {
    fs.rmSync(dir, { recursive: true, force: true });
    if (fs.existsSync(TEST_TMP_ROOT) && fs.readdirSync(TEST_TMP_ROOT).length === 0) fs.rmdirSync(TEST_TMP_ROOT);
  },
);

function removeStaleRuns(): void {
  for (const name of fs.existsSync(TEST_TMP_ROOT) ? fs.readdirSync(TEST_TMP_ROOT) : []) {
    // The run's folder, and the copies of the project a test makes next to it.
    const pid = Number(/^test-(\d+)(?:-.+)?$/.exec(name)?.[1]);
    if (pid && !isAlive(pid)) fs.rmSync(path.join(TEST_TMP_ROOT, name), { recursive: true, force: true });
  }
}

export async function setup(): Promise<void> {
  await runFolder.acquire();
}
export const teardown = runFolder.release;
