/**
 * The SQL resources' login lives outside their state: each provider gets the admin login from the config it is given
 * (configure), and the state keeps only the database's label. Against embedded PostgreSQL: a password rotation
 * together with a tenant removal in one `up`, refresh after it, a destroy or refresh configured from the last `up`'s
 * config after a rotation (and with `--run-program`), a provisioning endpoint (tunnel) different from the task
 * endpoint, and a resource of another database.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubApiConfigRows, hubPlatConfigRows } from "../../core/rows";
import { configRowProvider, readRow, CONFIG_ROW_PROVIDER_VERSION, type ConfigRowState } from "../../providers/sqlRows";
import { baselineProvider } from "../../providers/baseline";
import { databaseLabel, pgClientConfig, provisioningLogin } from "../../providers/pg";
import {
  baselineInputs,
  configureRequest,
  configureSqlProviders,
  databaseConfigOf,
  warehouseWithBaseline,
  type Warehouse,
} from "../fixtures/warehouse";
import { dynamicProviderConfig } from "../support/engine";

let wh: Warehouse;
const ADMIN = "rotating_admin";

beforeAll(async () => {
  wh = await warehouseWithBaseline("login");
  // A provisioning login of its own, whose password the test rotates (the embedded server's superuser is shared).
  await wh.query(`DROP ROLE IF EXISTS ${ADMIN}`).catch(() => undefined);
  await wh.query(`CREATE ROLE ${ADMIN} LOGIN PASSWORD 'first-Pw1'`);
  await wh.query(`GRANT USAGE ON SCHEMA staging TO ${ADMIN}`);
  await wh.query(`GRANT ALL ON ALL TABLES IN SCHEMA staging TO ${ADMIN}`);
});
afterAll(async () => {
  await wh?.drop();
  const c = new Client({ connectionString: wh.url });
  await c.connect().catch(() => undefined);
  await c.query(`DROP ROLE IF EXISTS ${ADMIN}`).catch(() => undefined);
  await c.end().catch(() => undefined);
});

const adminConfig = (password: string) => databaseConfigOf({ ...wh.connection, user: ADMIN, password });

function rowsOf(tenant: number): ConfigRowState[] {
  const id = wh.config.hubTenants[tenant].hubTenantId;
  return [...hubApiConfigRows(wh.config), ...hubPlatConfigRows(wh.config)]
    .filter((r) => (r.key.hub_tenant_id ?? r.values.hub_tenant_id) === id)
    .map((r) => ({
      target: wh.target,
      schema: "staging",
      table: r.table,
      key: r.key,
      values: r.values,
      version: CONFIG_ROW_PROVIDER_VERSION,
    }));
}

const countOf = async (tenantId: string) =>
  (
    await wh.query<{ n: number }>(
      "SELECT (SELECT count(*) FROM staging.hub_api_config WHERE hub_tenant_id = $1) + (SELECT count(*) FROM staging.hub_plat_config WHERE hub_tenant_id = $1) AS n",
      [tenantId],
    )
  )[0].n;

describe("the admin login outside the resources' state", () => {
  it("survives a password rotation together with a tenant removal in one up, and refresh after it", async () => {
    // First `up`: two tenants' rows, with the first password.
    await configureSqlProviders(adminConfig("first-Pw1"));
    const created: { id: string; outs?: ConfigRowState; inputs: ConfigRowState }[] = [];
    for (const row of [...rowsOf(0), ...rowsOf(1)])
      created.push({ ...(await configRowProvider.create(row)), inputs: row });
    const [us, eu] = wh.config.hubTenants.map((t) => t.hubTenantId);
    // US: three HUB_API_CONFIG rows and the platform tenants US and CA; EU: three and EU.
    expect([Number(await countOf(us)), Number(await countOf(eu))]).toEqual([5, 4]);
    // The state holds the label, no login.
    for (const c of created) {
      expect(c.outs!.target).toBe(wh.target);
      expect(JSON.stringify(c.outs)).not.toMatch(/first-Pw1|rotating_admin/);
    }

    // The DBA rotates the password; the stack config gets the new one.
    await wh.query(`ALTER ROLE ${ADMIN} PASSWORD 'second-Pw2'`);
    // Second `up`, a new provider process: it reads the current login. The EU tenant was removed from the config:
    // its rows are deleted with their old state, which never held the first password.
    await configureSqlProviders(adminConfig("second-Pw2"));
    const of = (c: { inputs: ConfigRowState }) => c.inputs.key.hub_tenant_id ?? c.inputs.values.hub_tenant_id;
    for (const c of created.filter((c) => of(c) === eu)) await configRowProvider.delete!(c.id, c.outs!);
    expect([Number(await countOf(us)), Number(await countOf(eu))]).toEqual([5, 0]);
    // `pulumi refresh` reads the remaining rows with the new login.
    for (const c of created.filter((c) => of(c) === us)) {
      const read = await configRowProvider.read!(c.id, c.outs);
      expect(read.id).toBe(c.id);
      expect(read.props!.values).toEqual(c.inputs.values);
    }
    // The old password is gone indeed: anything still holding it would have failed.
    await expect(
      readRow({ ...wh.connection, user: ADMIN, password: "first-Pw1" }, { ...rowsOf(0)[0], columns: [] }),
    ).rejects.toThrow(/password authentication failed/);
    for (const c of created.filter((c) => of(c) === us)) await configRowProvider.delete!(c.id, c.outs!);
  });

  it("after a rotation, a destroy configured from the last up's provider inputs says what to run; given the new password that way, it connects", async () => {
    const config = (password: string) => configureRequest(adminConfig(password));
    await wh.query(`ALTER ROLE ${ADMIN} PASSWORD 'first-Pw1'`);
    // `pulumi up`: the provider's inputs (the whole stack config) are recorded in the state with the first password.
    const recorded = config("first-Pw1");
    await configRowProvider.configure!(dynamicProviderConfig("up", recorded, recorded));
    const [row] = rowsOf(0);
    const created = await configRowProvider.create(row);
    const present = async () =>
      Number(
        (
          await wh.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM staging.hub_api_config WHERE hub_tenant_id = $1 AND hub_api_name = $2",
            [row.key.hub_tenant_id, row.key.hub_api_name],
          )
        )[0].n,
      );
    expect(await present()).toBe(1);

    // The DBA rotates the password; the team sets the new one in the stack config.
    await wh.query(`ALTER ROLE ${ADMIN} PASSWORD 'second-Pw2'`);
    const now = config("second-Pw2");
    // `pulumi destroy`, `pulumi refresh`: configured from the state's inputs, the old password.
    for (const operation of ["destroy", "refresh"] as const) {
      await configRowProvider.configure!(dynamicProviderConfig(operation, recorded, now));
      const call =
        operation === "destroy"
          ? configRowProvider.delete!(created.id, created.outs!)
          : configRowProvider.read!(created.id, created.outs);
      const error = (await Promise.resolve(call).catch((e: Error) => e)) as Error;
      expect(error.message).toMatch(
        /password authentication failed for user "rotating_admin": the SQL resources log in as hubExport:database\.admin as their provider was configured/,
      );
      expect(error.message).toContain(
        "run `pulumi up` first, or `pulumi refresh --run-program` / `pulumi destroy --run-program` (Pulumi CLI 3.231 or later)",
      );
      expect(error.message).not.toContain("first-Pw1");
    }
    expect(await present()).toBe(1);

    // The documented way: `pulumi refresh --run-program`, `pulumi destroy --run-program` (or `pulumi up` first, which
    // records the new inputs, after which a plain destroy gets them) hand the provider the new password: it connects.
    await configRowProvider.configure!(dynamicProviderConfig("refresh --run-program", recorded, now));
    expect((await configRowProvider.read!(created.id, created.outs)).id).toBe(created.id);
    await configRowProvider.configure!(dynamicProviderConfig("destroy --run-program", recorded, now));
    await configRowProvider.delete!(created.id, created.outs!);
    expect(await present()).toBe(0);
    await wh.query(`ALTER ROLE ${ADMIN} PASSWORD 'first-Pw1'`);
  });

  it("provisions through a tunnel (provisioning endpoint) while the state names the task endpoint", async () => {
    const database = databaseConfigOf(wh.connection, {
      host: "platdb-qa.cluster-abc.us-east-1.rds.amazonaws.com",
      port: 5432,
      provisioning: { host: wh.connection.host, port: wh.connection.port },
    });
    const label = databaseLabel(database);
    expect(label).toBe(`platdb-qa.cluster-abc.us-east-1.rds.amazonaws.com:5432/${wh.connection.database}`);
    await configureSqlProviders(database);
    const row = { ...rowsOf(0)[0], target: label };
    const { id, outs } = await configRowProvider.create(row);
    expect(outs!.target).toBe(label);
    expect(Number(await countOf(row.key.hub_tenant_id))).toBe(1);
    const baseline = baselineInputs(label, wh.config);
    expect((await baselineProvider.create(baseline)).id).toBe(`${label}#${baseline.name}`);
    await configRowProvider.delete!(id, outs!);
    expect(Number(await countOf(row.key.hub_tenant_id))).toBe(0);
  });

  it("refuses to touch a resource of another database than the configured one, naming both", async () => {
    await configureSqlProviders(databaseConfigOf(wh.connection));
    const row = { ...rowsOf(0)[0], target: "platdb-old.example.com:5432/PLATDB" };
    await expect(configRowProvider.delete!("id", row)).rejects.toThrow(
      new RegExp(
        `belongs to database platdb-old\\.example\\.com:5432/PLATDB, but hubExport:database is ${wh.target.replace(/[.]/g, "\\.")}`,
      ),
    );
    // And a new target replaces the row (deleted first), it is never updated across databases.
    expect(await configRowProvider.diff!("id", rowsOf(0)[0], row)).toMatchObject({
      replaces: ["target"],
      deleteBeforeReplace: true,
    });
  });

  it("stops with the command to run when the stack has no admin password", async () => {
    await expect(
      configRowProvider.configure!(configureRequest(databaseConfigOf(wh.connection, { admin: { username: ADMIN } }))),
    ).rejects.toThrow(
      "hubExport:database.admin.password is not set: pulumi config set --secret --path 'hubExport:database.admin.password'",
    );
  });
});

describe("TLS for the provisioning login", () => {
  it("verify-full checks the chain against the configured CA bundle and the name of the task endpoint, also through a tunnel", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-ca-"));
    try {
      fs.mkdirSync(`${dir}/certs`);
      fs.writeFileSync(`${dir}/certs/bundle.pem`, "-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n");
      const login = provisioningLogin(
        {
          host: "platdb.example.com",
          database: "PLATDB",
          sslMode: "verify-full",
          caBundle: "certs/bundle.pem",
          provisioning: { host: "127.0.0.1", port: 15432 },
          admin: { username: "a", password: "p" },
        },
        dir,
      );
      expect(login).toMatchObject({
        host: "127.0.0.1",
        port: 15432,
        serverName: "platdb.example.com",
        caPem: expect.stringContaining("stand-in"),
      });
      const ssl = pgClientConfig(login).ssl as {
        rejectUnauthorized: boolean;
        ca: string;
        checkServerIdentity(host: string, cert: object): Error | undefined;
      };
      expect(ssl.rejectUnauthorized).toBe(true);
      expect(ssl.ca).toContain("stand-in");
      // The certificate must name the task endpoint, not the tunnel's address.
      const cert = { subject: { CN: "platdb.example.com" }, subjectaltname: "DNS:platdb.example.com" };
      expect(ssl.checkServerIdentity("127.0.0.1", cert)).toBeUndefined();
      expect(
        ssl.checkServerIdentity("127.0.0.1", {
          subject: { CN: "other.example.com" },
          subjectaltname: "DNS:other.example.com",
        }),
      ).toBeInstanceOf(Error);
      expect(() =>
        provisioningLogin(
          {
            host: "h",
            database: "d",
            sslMode: "verify-full",
            caBundle: "certs/missing.pem",
            admin: { username: "a", password: "p" },
          },
          dir,
        ),
      ).toThrow(/hubExport:database\.caBundle: cannot read .*certs\/missing\.pem \(ENOENT\)/);
      // require: encrypted, not verified; disable: plain.
      expect(pgClientConfig({ ...login, sslMode: "require" }).ssl).toEqual({ rejectUnauthorized: false });
      expect(pgClientConfig({ ...login, sslMode: "disable" }).ssl).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
