import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { TENANTS } from "../../bench/platform";

/** A copy of the platform's files, changed by `edit`, and the run's arguments for it. */
function variant(
  f: ExportFixture,
  name: string,
  edit: (dir: { definition: string; scripts: string; connections: string }) => void,
): string[] {
  const root = path.join(f.platform.dir, `variant-${name}`);
  const definition = path.join(root, path.basename(f.platform.definitionFile));
  const scripts = path.join(root, "scripts");
  const connections = path.join(root, "connections");
  fs.mkdirSync(root);
  fs.cpSync(f.platform.definitionFile, definition);
  fs.cpSync(f.platform.scriptsDir, scripts, { recursive: true });
  fs.cpSync(f.platform.connectionsDir, connections, { recursive: true });
  edit({ definition, scripts, connections });
  return ["run", "--definition", definition, "--scripts", scripts, "--connections", connections];
}

describe("export task: everything is checked before any data is touched", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 50 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  async function expectRefused(args: string[], message: RegExp): Promise<void> {
    const result = await runTask(args);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
    for (const table of [f.t.run, f.t.runPart, f.t.messages, f.t.status, f.t.archive, f.t.intakeJob, f.t.watermark])
      expect(await f.count(table)).toBe(0);
    const state = f.emulator.state();
    expect(state.intakeJobs).toEqual([]);
    expect(
      Object.values(state.queues)
        .flatMap((q) => Object.values(q.destinations))
        .reduce((n, d) => n + d.count, 0),
    ).toBe(0);
  }

  it("refuses a definition that is not a valid rendered pipeline", async () => {
    const args = variant(f, "bad-definition", ({ definition }) => {
      const doc = JSON.parse(fs.readFileSync(definition, "utf8"));
      doc.parameters.records_per_hub_message = 0;
      delete doc.tasks[4];
      doc.tasks = doc.tasks.filter(Boolean);
      fs.writeFileSync(definition, JSON.stringify(doc));
    });
    await expectRefused(args, /pipeline definition .*: invalid[\s\S]*records_per_hub_message[\s\S]*tasks/);
    await expectRefused(
      variant(f, "not-json", ({ definition }) => fs.writeFileSync(definition, "{ nope")),
      /not valid JSON/,
    );
  });

  it("refuses a scripts folder without credentials.ini or tenant_credentials.txt", async () => {
    await expectRefused(
      variant(f, "no-tenant-credentials", ({ scripts }) => fs.rmSync(path.join(scripts, "tenant_credentials.txt"))),
      /missing credential file[\s\S]*tenant_credentials\.txt/,
    );
    await expectRefused(
      variant(f, "no-credentials-ini", ({ scripts }) => fs.rmSync(path.join(scripts, "credentials.ini"))),
      /missing credential file[\s\S]*credentials\.ini/,
    );
  });

  it("refuses an unknown database connection name", async () => {
    const args = variant(f, "unknown-connection", ({ scripts }) =>
      fs.writeFileSync(path.join(scripts, "credentials.ini"), "[warehouse]\nwarehouse_connection = NO_SUCH_DB\n"),
    );
    await expectRefused(args, /unknown connection 'NO_SUCH_DB'/);
  });

  it("refuses an unreachable database", async () => {
    const args = variant(f, "unreachable", ({ connections }) => {
      const file = path.join(connections, "PLAT_WAREHOUSE_TEST.json");
      const record = JSON.parse(fs.readFileSync(file, "utf8"));
      record.url = record.url.replace(/:\d+\//, ":1/");
      fs.writeFileSync(file, JSON.stringify(record));
    });
    await expectRefused(args, /cannot connect to the database of connection PLAT_WAREHOUSE_TEST \(127\.0\.0\.1:1\//);
  });

  it("refuses a tenant without credentials, and a tenant whose hub destination has no publish step", async () => {
    const noCredentials = variant(f, "tenant-no-credentials", ({ scripts }) => {
      const file = path.join(scripts, "tenant_credentials.txt");
      const map = JSON.parse(fs.readFileSync(file, "utf8"));
      delete map[TENANTS.EU.hubTenantId];
      fs.writeFileSync(file, JSON.stringify(map));
    });
    await expectRefused(
      noCredentials,
      new RegExp(
        `tenant ${TENANTS.EU.hubTenantId} \\(ACME_EU_TEST\\): no credentials string in tenant_credentials.txt`,
      ),
    );
    const noStep = variant(f, "no-step", ({ definition }) => {
      const doc = JSON.parse(fs.readFileSync(definition, "utf8"));
      doc.tasks[2].steps = doc.tasks[2].steps.filter((s: { region: string }) => s.region !== "EU");
      fs.writeFileSync(definition, JSON.stringify(doc));
    });
    await expectRefused(noStep, /hub_destination HUB_MQ_EU_TEST has no publish step in the definition/);
  });

  it("names the file that creates missing tables: the common baseline, or the client's run tables", async () => {
    const staging = f.platform.stagingSchema;
    await f.pool.query(
      `ALTER TABLE ${staging}.HUB_ACME_MESSAGES_STATUS RENAME TO hub_acme_messages_status_away; ALTER TABLE ${staging}.HUB_EXPORT_WATERMARK RENAME TO hub_export_watermark_away`,
    );
    try {
      const result = await runTask(f.platform.args.slice());
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /staging tables missing: staging\.HUB_EXPORT_WATERMARK \(apply the common-schema baseline Hub_Plat_Common_Schema_Baseline_<BuildNumber>\)/,
      );
      expect(result.stderr).toMatch(
        /the client's run tables missing: staging\.HUB_ACME_MESSAGES_STATUS \(apply Hub_Client_Run_Tables_<BuildNumber> for this client\)/,
      );
      expect(result.stderr).not.toMatch(/at .*\.js:\d+/);
    } finally {
      await f.pool.query(
        `ALTER TABLE ${staging}.hub_acme_messages_status_away RENAME TO hub_acme_messages_status; ALTER TABLE ${staging}.hub_export_watermark_away RENAME TO hub_export_watermark`,
      );
    }
  });

  it("refuses hub and broker URLs the stack did not configure: another host, http, loopback not allowed; naming the row or record and the URL", async () => {
    const apiConfig = `${f.platform.stagingSchema}.HUB_API_CONFIG`;
    const { rows } = await f.pool.query<{ hub_api_url: string }>(
      `SELECT hub_api_url FROM ${apiConfig} WHERE hub_api_name = 'ERS' AND hub_tenant_id = $1`,
      [TENANTS.US.hubTenantId],
    );
    const ers = rows[0].hub_api_url;
    const setErs = (url: string) =>
      f.pool.query(`UPDATE ${apiConfig} SET hub_api_url = $2 WHERE hub_api_name = 'ERS' AND hub_tenant_id = $1`, [
        TENANTS.US.hubTenantId,
        url,
      ]);
    try {
      // Another pipeline (or an attacker) changed the shared table: the tenant's credentials would go elsewhere.
      await setErs("https://hub-ext-evil.example.net/ers/api/");
      await expectRefused(
        f.platform.args.slice(),
        new RegExp(
          `HUB_API_CONFIG row ERS \\(hub_tenant_id ${TENANTS.US.hubTenantId}\\): https://hub-ext-evil\\.example\\.net/ers/api/ host hub-ext-evil\\.example\\.net is not one of the stack's hosts for region US`,
        ),
      );
      await setErs(ers.replace("http://127.0.0.1", "http://localhost"));
      await expectRefused(
        f.platform.args.slice(),
        /HUB_API_CONFIG row ERS .*: http:\/\/localhost:\d+\/ers\/api\/ host localhost:\d+ is not one of the stack's hosts for region US/,
      );
    } finally {
      await setErs(ers);
    }
    // A connection record pointing elsewhere.
    const record = variant(f, "evil-broker", ({ connections }) => {
      const file = path.join(
        connections,
        fs.readdirSync(connections).find((n) => n.includes("HUB_MQ_EU"))!,
      );
      const doc = JSON.parse(fs.readFileSync(file, "utf8"));
      doc.url = "http://mq-evil.example.net/api/v1/organizations/";
      fs.writeFileSync(file, JSON.stringify(doc));
    });
    await expectRefused(
      record,
      /connection record HUB_MQ_EU_TEST url: http:\/\/mq-evil\.example\.net\/api\/v1\/organizations\/ must use https/,
    );
    // The same loopback URLs the test platform uses, in a definition that does not allow loopback.
    const strict = variant(f, "no-loopback", ({ definition }) => {
      const doc = JSON.parse(fs.readFileSync(definition, "utf8"));
      doc.endpoints.allowLoopback = false;
      fs.writeFileSync(definition, JSON.stringify(doc));
    });
    await expectRefused(
      strict,
      /HUB_API_CONFIG row ERS .*: http:\/\/127\.0\.0\.1:\d+\/ers\/api\/ points at loopback, which the definition does not allow/,
    );
    // A definition rendered before it carried the hosts.
    const old = variant(f, "no-endpoints", ({ definition }) => {
      const doc = JSON.parse(fs.readFileSync(definition, "utf8"));
      delete doc.endpoints;
      fs.writeFileSync(definition, JSON.stringify(doc));
    });
    await expectRefused(old, /\$\.endpoints: is required: the hub hosts the task may call/);
  });

  it("refuses a URL with credentials in HUB_API_CONFIG, a queue connection record or the database's record: names the row, shows the URL without them, never the password", async () => {
    const password = "Zx9-url-secret";
    const apiConfig = `${f.platform.stagingSchema}.HUB_API_CONFIG`;
    const { rows } = await f.pool.query<{ hub_api_url: string }>(
      `SELECT hub_api_url FROM ${apiConfig} WHERE hub_api_name = 'HRSYS' AND hub_tenant_id = $1`,
      [TENANTS.EU.hubTenantId],
    );
    const hrsys = rows[0].hub_api_url;
    const withCredentials = (url: string) => url.replace("://", `://acme:${password}@`);
    const refused = async (args: string[], message: RegExp) => {
      const result = await runTask(args);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stdout + result.stderr).not.toContain(password);
      for (const table of [f.t.run, f.t.messages, f.t.status, f.t.intakeJob]) expect(await f.count(table)).toBe(0);
      expect(f.emulator.state().intakeJobs).toEqual([]);
    };
    // The stack's own host, so that only the credentials are wrong.
    await f.pool.query(`UPDATE ${apiConfig} SET hub_api_url = $2 WHERE hub_api_name = 'HRSYS' AND hub_tenant_id = $1`, [
      TENANTS.EU.hubTenantId,
      withCredentials(hrsys),
    ]);
    try {
      const shown = hrsys.replace(/[.?]/g, "\\$&");
      await refused(
        f.platform.args.slice(),
        new RegExp(
          `HUB_API_CONFIG row HRSYS \\(hub_tenant_id ${TENANTS.EU.hubTenantId}\\): ${shown} carries credentials \\(user:password@ before the host\\): remove them`,
        ),
      );
    } finally {
      await f.pool.query(
        `UPDATE ${apiConfig} SET hub_api_url = $2 WHERE hub_api_name = 'HRSYS' AND hub_tenant_id = $1`,
        [TENANTS.EU.hubTenantId, hrsys],
      );
    }
    const queueRecord = variant(f, "broker-credentials", ({ connections }) => {
      const file = path.join(
        connections,
        fs.readdirSync(connections).find((n) => n.includes("HUB_MQ_US"))!,
      );
      const doc = JSON.parse(fs.readFileSync(file, "utf8"));
      doc.url = withCredentials(doc.url);
      fs.writeFileSync(file, JSON.stringify(doc));
    });
    await refused(
      queueRecord,
      /connection record HUB_MQ_US_TEST url: http:\/\/127\.0\.0\.1:\d+\/mq\/us\/api\/v1\/organizations\/ carries credentials/,
    );
    const databaseRecord = variant(f, "database-credentials", ({ connections }) => {
      const file = path.join(connections, "PLAT_WAREHOUSE_TEST.json");
      const doc = JSON.parse(fs.readFileSync(file, "utf8"));
      doc.url = withCredentials(doc.url);
      fs.writeFileSync(file, JSON.stringify(doc));
    });
    await refused(
      databaseRecord,
      /database connection PLAT_WAREHOUSE_TEST: url postgres:\/\/127\.0\.0\.1:\d+\/\S+ carries credentials \(user:password@ before the host\): remove them; the login is the record's username and password/,
    );
  });

  it("refuses a connection record whose URL has a malformed %-escape or a secret in its query string: one line naming the record, never the secret", async () => {
    const secret = "Zx9-query-secret";
    const refused = async (args: string[], message: RegExp) => {
      const result = await runTask(args);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/URIError|internal error|at .*\.js:\d+/);
      expect(result.stdout + result.stderr).not.toContain(secret);
      for (const table of [f.t.run, f.t.messages, f.t.status, f.t.intakeJob]) expect(await f.count(table)).toBe(0);
    };
    const record = (name: string, file: (files: string[]) => string, edit: (doc: Record<string, string>) => void) =>
      variant(f, name, ({ connections }) => {
        const full = path.join(connections, file(fs.readdirSync(connections)));
        const doc = JSON.parse(fs.readFileSync(full, "utf8")) as Record<string, string>;
        edit(doc);
        fs.writeFileSync(full, JSON.stringify(doc));
      });
    const database = (files: string[]) => files.find((n) => n.startsWith("PLAT_WAREHOUSE"))!;
    await refused(
      record("database-escape", database, (doc) => (doc.url += "%E0")),
      /^database connection PLAT_WAREHOUSE_TEST: url has a malformed %-escape in its database name \(a % must be followed by two hex digits of UTF-8, %25 for % itself\)\n$/,
    );
    await refused(
      record("database-query", database, (doc) => (doc.url += `?sslmode=disable&password=${secret}`)),
      /^database connection PLAT_WAREHOUSE_TEST: url postgres:\/\/127\.0\.0\.1:\d+\/\S+ carries a secret in its query string \(password=\.\.\.\): remove it; the login is the record's username and password\n$/,
    );
    await refused(
      record(
        "queue-auth-query",
        (files) => files.find((n) => n.includes("HUB_MQ_US"))!,
        (doc) =>
          (doc.additionalProperties = doc.additionalProperties.replace(
            /authUrl=([^;]*)/,
            `authUrl=$1?client_secret=${secret}`,
          )),
      ),
      /connection record HUB_MQ_US_TEST authUrl: http:\/\/127\.0\.0\.1:\d+\/\S+ carries a secret in its query string \(client_secret=\.\.\.\): remove it/,
    );
  });

  it("refuses missing HUB_API_CONFIG rows", async () => {
    const { rows } = await f.pool.query(
      `DELETE FROM ${f.platform.stagingSchema}.HUB_API_CONFIG WHERE hub_api_name = 'ERS' AND hub_tenant_id = $1 RETURNING *`,
      [TENANTS.US.hubTenantId],
    );
    try {
      await expectRefused(f.platform.args.slice(), /HUB_API_CONFIG has no row for ERS/);
    } finally {
      const r = rows[0];
      await f.pool.query(
        `INSERT INTO ${f.platform.stagingSchema}.HUB_API_CONFIG (hub_api_name, hub_api_url, hub_environment_name, hub_region, hub_tenant_id) VALUES ($1, $2, $3, $4, $5)`,
        [r.hub_api_name, r.hub_api_url, r.hub_environment_name, r.hub_region, r.hub_tenant_id],
      );
    }
  });
});
