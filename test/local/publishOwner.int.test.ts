/**
 * The task's read access to the publish schema stays true: tables a loader role creates there after provisioning
 * (not the admin) are readable by the task, through the default privileges set for each of
 * hubExport:database.publishTableOwners. Against embedded PostgreSQL with the task's own login role, provisioned as
 * `npm start` provisions (the same grants as components/warehouse, as an admin like RDS's master user), the export task
 * bundle run on the result.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/database";
import { emulatorConfig, rawStackConfigFor } from "../../bench/platform";
import { startTask } from "../support/taskProcess";
import { startEmulator, type Emulator } from "../../emulator";
import { validateStackConfig } from "../../config/validate";
import { installationOf, type Installation } from "../../core/installation";
import { loadPipelineTemplate, loadSqlSources } from "../../templates";
import { applyInstallation } from "../../local/install";
import { standInForDba } from "../../local/warehouseDba";
import { PLATFORM_ROLES } from "../../bench/platformRoles";
import { localPaths } from "../../local/paths";
import { BUCKET_FOLDERS } from "../../core/naming";
import { seedSampleEmployees } from "../../task/model/sampleData";

const suffix = crypto.randomBytes(4).toString("hex");
const TASK_ROLE = `task_${suffix}`;
const LOADER = `loader_${suffix}`;

let db: { url: string; adminUrl: string; name: string; drop(): Promise<void> };
let hub: Emulator;
let dir: string;
let installation: Installation;

beforeAll(async () => {
  [db, hub] = await Promise.all([createTestDatabase("owners"), startEmulator({ config: emulatorConfig() })]);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-owners-"));
  const raw = rawStackConfigFor(db.adminUrl, hub.urls);
  raw.database.task = { username: TASK_ROLE, password: `task-${suffix}-Pw1` };
  raw.database.publishTableOwners = [LOADER];
  installation = installationOf(validateStackConfig(raw, { source: "test", stack: "test" }), {
    template: loadPipelineTemplate(),
    ...loadSqlSources(),
  });
});
afterAll(async () => {
  await Promise.all([db?.drop(), hub?.close()]);
  const admin = new Client({ connectionString: db.url.replace(/\/[^/]*$/, "/postgres") });
  await admin.connect();
  for (const role of [TASK_ROLE, LOADER]) await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await admin.end();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("publish tables a loader role creates after provisioning", () => {
  it("are readable by the task: an export over them completes", async () => {
    const paths = localPaths(dir);
    // The platform's DBA: the loader owns the publish schema; the admin gets what `probe --warehouse` prints.
    await standInForDba({
      superuserUrl: db.url,
      database: db.name,
      ...PLATFORM_ROLES,
      loaders: [LOADER],
      scope: {
        publishSchema: installation.publishSchema,
        stagingSchema: installation.stagingSchema,
        publishTableOwners: [LOADER],
        taskRole: TASK_ROLE,
      },
    });
    await applyInstallation(installation, paths, {});

    // After provisioning, the loader (not the admin) creates the publish tables; the platform loads them.
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await seedSampleEmployees(client, {
        schema: installation.publishSchema,
        count: 40,
        seed: 4,
        platRegions: ["US", "EU"],
        loaderRole: LOADER,
      });
      // Who owns the publish tables, as probe --warehouse reads it (the owners' memberships it asks for).
      const owners = await client.query<{ tablename: string; tableowner: string }>(
        "SELECT tablename, tableowner FROM pg_tables WHERE schemaname = $1 ORDER BY 1",
        [installation.publishSchema],
      );
      expect(owners.rows.length).toBe(6);
      for (const t of owners.rows) expect(t.tableowner, t.tablename).toBe(LOADER);
    } finally {
      await client.end();
    }

    const task = await startTask([
      "run",
      "--definition",
      path.join(paths.bucket, installation.definitionKey),
      "--scripts",
      path.join(paths.bucket, BUCKET_FOLDERS.scripts),
      "--connections",
      paths.connections,
    ]);
    const result = await task.done;
    expect(result.stderr).not.toMatch(/permission denied/);
    expect(result.code, result.stdout.slice(-2000)).toBe(0);
    const done = result.events.find((e) => e.event === "run.done")!;
    expect(done).toMatchObject({ status: "ExecutionCompleted", extracted: 40 });
  });
});
