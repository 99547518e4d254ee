/**
 * `hub-export reload` on the embedded PostgreSQL, as an operator runs it (the CLI), between real runs of the export
 * task: the watermarks go, the history records who, the next run exports exactly that tenant in full, and it refuses
 * while a run holds the lock or waits to be resumed.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { runMain } from "../support/cli";
import { fixtureStackFile } from "../fixtures/stacks";
import { TENANTS } from "../../bench/platform";
import { Writable } from "node:stream";
import { executeCommand } from "../../cli/command";
import reloadCommand from "../../cli/commands/reload";

const US = TENANTS.US.hubTenantId;
const EU = TENANTS.EU.hubTenantId;

describe("hub-export reload", () => {
  let f: ExportFixture;
  let history: string;
  let dir: string;
  const watermarks = async (tenant: string) =>
    (
      await f.pool.query<{ country_code: string }>(
        `SELECT country_code FROM ${f.t.watermark} WHERE hub_tenant_id = $1 ORDER BY 1`,
        [tenant],
      )
    ).rows.map((r) => r.country_code);
  const reload = (...args: string[]) =>
    runMain(["reload", "--file", fixtureStackFile("qa"), "--database-url", f.db.url, ...args]);

  beforeAll(async () => {
    // As in the qa fixture: the US hub tenant is fed by platform regions US and CA.
    [f] = await Promise.all([
      exportFixture({
        employees: 300,
        platform: { extraPlatRegions: { CA: "US" } },
        platRegions: ["US", "CA", "EU", "APAC"],
      }),
      taskBundle(),
    ]);
    history = `${f.platform.stagingSchema}.HUB_EXPORT_RUN_HISTORY`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-reload-"));
    const first = await runTask(f.platform.args);
    expect(first.code).toBe(0);
  });
  afterAll(async () => {
    await f?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("removes the tenant's watermarks, records who and why, and says what the next run does; that run exports exactly it", async () => {
    const usCountries = await watermarks(US);
    const euBefore = await watermarks(EU);
    expect(usCountries.length).toBeGreaterThan(0);
    const { rows: inScope } = await f.pool.query(
      `SELECT count(*)::int AS n FROM ${f.platform.publishSchema}.employee WHERE plat_region IN ('US', 'CA')`,
    );

    const dbNow = async () => (await f.pool.query<{ now: Date }>("SELECT clock_timestamp() AS now")).rows[0].now;
    const before = await dbNow();
    const r = await reload("--tenant", "ACME_US_QA", "--actor", "alice@ops", "--reason", "hub lost the tenant's users");
    const after = await dbNow();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Database: \w+ on \S+ as postgres \(--database-url\)\nReload recorded in HUB_EXPORT_RUN_HISTORY \(id \d+\) at \S+ by alice@ops:\n/,
    );
    expect(r.stdout).toContain(`tenant ${US} (ACME_US_QA, platform regions US, CA), all countries`);
    expect(r.stdout).toContain(`watermarks removed: ${usCountries[0]} (was through `);
    expect(r.stdout).toContain(
      `The next run of HRSYS_EMPL_HUB_ACME_202611_QA exports ${inScope[0].n} employee(s) of this tenant in full, from idl_date 1901-01-01T00:00:00;`,
    );
    expect(await watermarks(US)).toEqual([]);
    expect(await watermarks(EU)).toEqual(euBefore);

    // The runs write their own rows (ExecutionCompleted); the reload is one more.
    const { rows } = await f.pool.query(`SELECT * FROM ${history} WHERE event = 'Reload'`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      plat_client_name: "ACME",
      job_name: "HRSYS_EMPL_HUB_ACME_202611_QA",
      event: "Reload",
      actor: "alice@ops",
      transaction_id: null,
    });
    expect(rows[0].detail).toMatchObject({
      hubTenantId: US,
      hubTenantCode: "ACME_US_QA",
      country: null,
      employeesInScope: inScope[0].n,
      reason: "hub lost the tenant's users",
      databaseUser: "postgres",
    });
    expect(rows[0].detail.watermarksReset.map((w: { country: string }) => w.country)).toEqual(usCountries);
    // Recorded by the reload, at the database's time.
    expect(rows[0].recorded_at.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(rows[0].recorded_at.getTime()).toBeLessThanOrEqual(after.getTime());

    // The next run: every employee of the US hub tenant again (US and CA), no EU employee (nothing changed there).
    const next = await runTask(f.platform.args);
    expect(next.code).toBe(0);
    const { rows: job } = await f.pool.query(
      `SELECT transaction_id, extracted_count FROM ${f.t.completedRuns} ORDER BY finished_at DESC LIMIT 1`,
    );
    expect(job[0].extracted_count).toBe(inScope[0].n);
    const { rows: tenants } = await f.pool.query(
      `SELECT DISTINCT hub_tenant_id FROM ${f.t.archive} WHERE transaction_id = $1`,
      [job[0].transaction_id],
    );
    expect(tenants.map((t) => t.hub_tenant_id)).toEqual([US]);
    expect(await watermarks(US)).toEqual(usCountries);
  });

  it("--country resets only that country of the tenant (the tenant given by id)", async () => {
    const countries = await watermarks(EU);
    expect(countries.length).toBeGreaterThan(1);
    const r = await reload("--tenant", EU.toUpperCase(), "--country", countries[0].toLowerCase(), "--json");
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({
      country: countries[0],
      tenant: { hubTenantId: EU, hubTenantCode: "ACME_EU_QA", platRegions: ["EU"] },
    });
    expect(result.watermarksReset.map((w: { country: string }) => w.country)).toEqual([countries[0]]);
    expect(await watermarks(EU)).toEqual(countries.slice(1));
    expect(result.actor).toBe(`${os.userInfo().username}@${os.hostname()}`);
  });

  it("refuses while a run holds the client's run lock, naming the session; changes nothing", async () => {
    const holder = new Client({ connectionString: f.db.url, application_name: "hub-export" });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(hashtext('hub-export'), hashtext('ACME'))");
      const pid = (await holder.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      const before = await f.count(history);
      const wm = await watermarks(US);
      const r = await reload("--tenant", "ACME_US_QA");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^a run of client ACME is working now \\(session pid ${pid}, hub-export, connected since \\S+\\): reload refuses while it holds the run lock\\n`,
        ),
      );
      expect(await f.count(history)).toBe(before);
      expect(await watermarks(US)).toEqual(wm);
    } finally {
      await holder.end();
    }
  });

  it("refuses while a stopped run waits to be resumed (its finish would undo the reload)", async () => {
    const tx = "00000000-0000-4000-8000-00000000dead";
    await f.pool.query(
      `INSERT INTO ${f.t.run} (transaction_id, job_name, plat_client_name, phase, build_number, upper_bound) VALUES ($1, 'J', 'ACME', 'PUBLISH', '1', localtimestamp)`,
      [tx],
    );
    try {
      const r = await reload("--tenant", "ACME_US_QA");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`run ${tx} of client ACME is unfinished (phase PUBLISH, since `);
      expect(r.stderr).toContain("let that run finish first");
    } finally {
      await f.pool.query(`DELETE FROM ${f.t.run} WHERE transaction_id = $1`, [tx]);
    }
  });

  it("--stack or --file without --database-url connects to the stack's database as its task login, the password from PGPASSWORD", async () => {
    const url = new URL(f.db.url);
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
    const database = url.pathname.slice(1);
    const { caBundle: _ca, ...stackDatabase } = doc.config["hubExport:database"];
    doc.config["hubExport:database"] = {
      ...stackDatabase,
      host: "127.0.0.1",
      port: Number(url.port),
      database,
      sslMode: "disable",
      task: { ...stackDatabase.task, username: "postgres" },
    };
    doc.config["hubExport:publishSchema"] = `${database}.publish`;
    doc.config["hubExport:stagingSchema"] = `${database}.staging`;
    const file = path.join(dir, "Pulumi.reloadtest.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const env = { PGPASSWORD: decodeURIComponent(url.password), PGPASSFILE: path.join(dir, "none") };
    const ok = await runMain(["reload", "--file", file, "--tenant", "ACME_US_QA", "--actor", "bob"], { env });
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    const { rows } = await f.pool.query(
      `SELECT actor, detail->>'databaseUser' AS u FROM ${history} ORDER BY history_id DESC LIMIT 1`,
    );
    expect(rows[0]).toEqual({ actor: "bob", u: "postgres" });
    const noPassword = await runMain(["reload", "--file", file, "--tenant", "ACME_US_QA"], {
      env: { PGPASSWORD: "", PGPASSFILE: path.join(dir, "none") },
    });
    expect(noPassword.code).toBe(1);
    expect(noPassword.stderr).toBe(
      `no password for postgres@127.0.0.1: set PGPASSWORD or add a ~/.pgpass entry (the stack's 'pulumi config get --path hubExport:database.task.password'), or give --database-url postgres://USER@HOST:PORT/${database} (through a tunnel if need be), or --dir .local for the embedded default's\n`,
    );
  });

  it.each<[string, string[], RegExp, number]>([
    ["no --tenant", [], /--tenant is required/, 2],
    [
      "an unknown tenant, listing the known ones",
      ["--tenant", "ACME_APAC"],
      /^--tenant ACME_APAC: no such hub tenant in the stack config; its tenants are:\n {2}3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c \(ACME_US_QA, US, platform regions US, CA\)\n {2}7a2d4f6b/,
      1,
    ],
    [
      "a bad country",
      ["--tenant", "ACME_US_QA", "--country", "Germany"],
      /--country must be an ISO 3166 alpha-2 country code/,
      2,
    ],
  ])("rejects %s, before connecting", async (_what, args, message, code) => {
    let stderr = "";
    const sink = (into: (t: string) => void) =>
      new Writable({ write: (chunk, _enc, done) => (into(String(chunk)), done()) });
    const result = await executeCommand(
      "reload",
      reloadCommand,
      ["--file", fixtureStackFile("qa"), "--database-url", "postgres://nobody@127.0.0.1:1/none", ...args],
      { stdout: sink(() => {}), stderr: sink((t) => (stderr += t)), stdin: process.stdin },
    );
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(result).toBe(code);
  });
});
