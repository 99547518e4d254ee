/**
 * Commands that act on a deployed stack use that stack's warehouse (hubExport:database), never the local one, or
 * refuse in one line saying what they need; each names the database it reads on its first line. And a failed run
 * cannot be missed: `status` opens with the latest run, whatever its outcome, and its reason states the cause with
 * counts (not a pointer to a table). The stack here is a file of the test's own, pointing at the test's database.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { PROJECT_ROOT, runMain } from "../support/cli";
import { JOB_NAME, rawStackConfigFor } from "../../bench/platform";

/** Over the broker's 10 MB body limit: the message of this employee is refused for good (HTTP 400 at the broker). */
const TOO_WIDE = 11_000_000;

describe("a command with --stack or --file reads that stack's warehouse", () => {
  let f: ExportFixture;
  let dir: string;
  let stackFile: string;
  let database: string;
  let env: NodeJS.ProcessEnv;
  let failedTx: string;

  /** The test platform's stack config as a stack file: its secrets left to set (they come from PGPASSWORD here). */
  const writeStack = (name: string, edit: (raw: Record<string, any>) => void = () => {}) => {
    const raw = rawStackConfigFor(f.db.url, f.emulator.urls);
    for (const login of [raw.database.admin, raw.database.task]) delete login.password;
    for (const t of raw.hubTenants) delete t.clientSecret;
    for (const q of Object.values<Record<string, unknown>>(raw.queues)) delete q.clientSecret;
    edit(raw);
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(
      file,
      YAML.stringify({ config: Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hubExport:${k}`, v])) }),
    );
    return file;
  };

  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 120 }), taskBundle()]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-stackdb-"));
    stackFile = writeStack("opsqa");
    const url = new URL(f.db.url);
    database = url.pathname.slice(1);
    env = { PGPASSWORD: decodeURIComponent(url.password), PGPASSFILE: path.join(dir, "none") };
    expect((await runTask(f.platform.args)).code).toBe(0);
    // The next run fails: one US employee's message is too large for the broker.
    const { rows } = await f.pool.query(
      `SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region = 'US' ORDER BY 1 LIMIT 1`,
    );
    await f.pool.query(
      `UPDATE ${f.platform.publishSchema}.employee_address SET line1 = repeat('x', $2::int), changed_at = localtimestamp WHERE address_id = $1 || '-A1'`,
      [rows[0].employee_id, TOO_WIDE],
    );
    const failed = await runTask(f.platform.args);
    expect(failed.code).toBe(3);
    failedTx = failed.events.find((e) => e.event === "run.done")!.transactionId as string;
  }, 180_000);
  afterAll(async () => {
    await f?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("status --file: the stack's database, named on the first line; the failed run first, with its cause and counts", async () => {
    const r = await runMain(["status", "--file", stackFile], { env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe(
      `Database: ${database} on 127.0.0.1:${new URL(f.db.url).port} as postgres (the warehouse of ${stackFile}, hubExport:database)`,
    );
    expect(lines[1]).toBe(`Job ${JOB_NAME} in schema staging`);
    // The latest run comes first, although the completed run before it is the only one in HUB_INTAKE_JOB.
    expect(lines[3]).toMatch(
      new RegExp(`^Latest run: ExecutionFailed at \\S+, transaction ${failedTx} \\(by export-task\\)$`),
    );
    expect(lines[4]).toMatch(
      /^ {2}reason: 1 message\(s\) failed: 1 to queue US \(HUB_MQ_US_TEST\): message body of \d+ bytes exceeds the broker's limit of 10485760; the next run retries them$/,
    );
    expect(lines[5]).toMatch(
      /^ {2}counts: extracted 1, messages 1, published 0, failed 1, held back 0, ERS entities 0$/,
    );
    expect(lines[6]).toBe(
      `  each message and its reason: npx hub-export status --file ${stackFile} --transaction ${failedTx}`,
    );
    expect(r.stdout.indexOf("Latest run:")).toBeLessThan(r.stdout.indexOf("Completed runs"));
    expect(r.stdout).not.toContain("their reasons are in");

    const json = JSON.parse((await runMain(["status", "--file", stackFile, "--json"], { env })).stdout);
    expect(json.database).toBe(lines[0].slice("Database: ".length));
    expect(json.latestRun).toMatchObject({
      transactionId: failedTx,
      outcome: "ExecutionFailed",
      reason: expect.stringMatching(/^1 message\(s\) failed: 1 to queue US/),
    });

    // The printed command, pasted as printed, lists the message with its reason.
    const one = await runMain(lines[6].trim().split(/\s+/).slice(7), { env });
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.split("\n")[0]).toBe(lines[0]);
    expect(one.stdout).toMatch(/FAILED .* message body of \d+ bytes exceeds the broker's limit/);
  });

  it("cls check and reload --file name the stack's database first", async () => {
    const sheet = path.join(dir, "cls.csv");
    expect(
      (await runMain(["cls", "build", "--from", path.join(PROJECT_ROOT, "cls", "samples"), "--out", sheet])).code,
    ).toBe(0);
    const check = await runMain(["cls", "check", "--file", stackFile, "--sheet", sheet], { env });
    expect(check.stdout.split("\n")[0], check.stderr).toMatch(
      new RegExp(`^Database: ${database} on 127\\.0\\.0\\.1:\\d+ as postgres \\(the warehouse of `),
    );
    const reload = await runMain(["reload", "--file", stackFile, "--tenant", "ACME_US_TEST", "--actor", "carol"], {
      env,
    });
    expect(reload.code, reload.stderr).toBe(0);
    expect(reload.stdout.split("\n")[0]).toMatch(new RegExp(`^Database: ${database} on `));
    expect(reload.stdout.split("\n")[1]).toMatch(/^Reload recorded in HUB_EXPORT_RUN_HISTORY/);
  });

  it.each<[string, (raw: Record<string, any>) => void, NodeJS.ProcessEnv | undefined, RegExp]>([
    [
      "a warehouse still a PLACEHOLDER: example",
      (raw) => (raw.database.host = "PLACEHOLDER:platdb-qa.cluster-x.us-east-1.rds.amazonaws.com"),
      undefined,
      /^the warehouse of \S+ is not set: hubExport:database\.host is still a PLACEHOLDER: value in Pulumi\.placeholder\.yaml; set it, or give --database-url postgres:\/\/USER@HOST:PORT\/\w+ \(through a tunnel if need be\), or --dir \.local for the embedded default's\n$/,
    ],
    [
      "no password",
      () => {},
      { PGPASSWORD: "" },
      /^no password for postgres@127\.0\.0\.1: set PGPASSWORD or add a ~\/\.pgpass entry .*, or give --database-url /,
    ],
    [
      "a warehouse this machine cannot reach",
      (raw) => (raw.database.port = 1),
      undefined,
      /^cannot connect to the warehouse of \S+, \w+ on 127\.0\.0\.1:1 as postgres: .*; this machine needs a network path to it \(a VPN, or a tunnel named in hubExport:database\.provisioning\), or give --database-url /,
    ],
  ])("refuses in one line with %s, never falling back to the local database", async (name, edit, extraEnv, message) => {
    const file = writeStack(
      name === "no password" ? "nopassword" : name.includes("PLACEHOLDER") ? "placeholder" : "unreachable",
      edit,
    );
    for (const command of [
      ["status"],
      ["cls", "check"],
      ["retry", "--message-id", "00000000-0000-4000-8000-000000000001"],
    ]) {
      const r = await runMain([...command, "--file", file], { env: { ...env, ...extraEnv } });
      expect(r.code, `${command[0]}: ${r.stderr}`).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd().split("\n"), command[0]).toHaveLength(1);
      expect(r.stderr, command[0]).toMatch(message);
    }
  });

  it("status on a schema without the baseline's tables: one line naming the table and saying to apply it", async () => {
    const file = writeStack("nobaseline", (raw) => (raw.stagingSchema = `${database}.no_baseline`));
    const r = await runMain(["status", "--file", file], { env });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      /^the database refused: relation "no_baseline\.\w+" does not exist \(SQLSTATE 42P01\): a table the project needs is missing: create it \('pulumi up' applies the baseline\), or check the schema names\n$/,
    );
  });

  it("--dir reads the embedded default's database even with --file, and says so", async () => {
    const empty = path.join(dir, "no-local");
    const r = await runMain(["status", "--file", stackFile, "--dir", empty], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `no local database in ${path.join(empty, "postgres")}: run 'npm start' first, or give --stack (the stack's warehouse) or --database-url\n`,
    );
  });
});
