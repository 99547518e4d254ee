/** Starts one embedded PostgreSQL for the whole `npm test` run, on a free port, in a temporary data folder. */
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type EmbeddedServer } from "../../local/embeddedPostgres";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

let server: EmbeddedServer | undefined;
let dataDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-test-pg-"));
  server = await startEmbeddedPostgres({ dataDir, persistent: false });
  project.provide("pgAdminUrl", server.adminUrl);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}
