/**
 * The specification's step 12 names the tables `<staging_schema>.HUB_<CLIENT_NAME>_MESSAGES_ARCHIVE`; with
 * staging_schema `PLATDB.staging` that text is a cross-database reference, which PostgreSQL refuses. Every query the
 * project prints uses the schema alone and says so, and so do the docs. Checked against a real PostgreSQL.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { PROJECT_ROOT } from "../support/cli";
import { intakeJobQuery, stagingNamesNote } from "../../core/naming";
import { installationOf } from "../../core/installation";
import { loadPipelineTemplate, loadSqlSources } from "../../templates";
import { stackConfigFor } from "../../bench/platform";

describe("step 12's table names in PostgreSQL", () => {
  // Named in capitals, as the stacks' PLATDB is: created quoted, so that the name keeps its case.
  const name = `NAMES_${crypto.randomBytes(4).toString("hex").toUpperCase()}`;
  let url: string;
  let client: Client;
  let config: ReturnType<typeof stackConfigFor>;
  const admin = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
    const c = new Client({ connectionString: inject("pgAdminUrl") });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  beforeAll(async () => {
    await admin((c) => c.query(`CREATE DATABASE "${name}"`));
    const u = new URL(inject("pgAdminUrl"));
    u.pathname = `/${name}`;
    url = u.toString();
    config = stackConfigFor(url, {
      queues: { US: "http://127.0.0.1:9/us", EU: "http://127.0.0.1:9/eu", APAC: "http://127.0.0.1:9/apac" },
      cfg: "http://127.0.0.1:9/cfg/api/",
      ers: "http://127.0.0.1:9/ers/api/",
      hrsys: "http://127.0.0.1:9/hrsys/api/",
    });
    client = new Client({ connectionString: url });
    await client.connect();
    const installation = installationOf(config, { template: loadPipelineTemplate(), ...loadSqlSources() });
    await client.query(installation.baseline.sql);
    await client.query(installation.runTables.sql);
  });
  afterAll(async () => {
    await client?.end();
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });

  it("the specification's form, <staging_schema>.HUB_<CLIENT_NAME>_MESSAGES_ARCHIVE with PLATDB.staging, is refused as a cross-database reference", async () => {
    expect(config.stagingSchema).toBe(`${name}.staging`);
    const refused = await client
      .query(`SELECT count(*) FROM ${config.stagingSchema}.HUB_ACME_MESSAGES_ARCHIVE`)
      .catch((err: Error & { code?: string }) => err);
    expect(refused).toMatchObject({
      code: "0A000",
      message: expect.stringContaining("cross-database references are not implemented"),
    });
    expect((await client.query("SELECT count(*)::int AS n FROM staging.HUB_ACME_MESSAGES_ARCHIVE")).rows[0].n).toBe(0);
  });

  it("the printed queries name the schema alone, say why, and run as printed", async () => {
    const note = stagingNamesNote(config.stagingSchema);
    expect(note).toBe(
      `-- in database ${name}, schema-only names (staging.<table>): ${name}.staging.<table>, the specification's <staging_schema>.<table>, is a cross-database reference PostgreSQL refuses (unquoted, ${name} reads as ${name.toLowerCase()})`,
    );
    const query = intakeJobQuery(config);
    expect(query.endsWith(` ${note}`)).toBe(true);
    expect(query.slice(0, -note.length)).not.toContain(`${name}.`);
    await expect(client.query(query)).resolves.toMatchObject({ rows: [] });
  });

  it("the docs say so where they name the tables: the procedure's step 12 and operating.md", () => {
    const developing = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "developing.md"), "utf8");
    const step12 = developing.split("\n").find((l) => l.startsWith("| 12. "))!;
    expect(step12).toContain(
      "`PLATDB.staging.HUB_ACME_MESSAGES_ARCHIVE`, a cross-database reference PostgreSQL refuses",
    );
    expect(step12).toContain("`staging.HUB_ACME_MESSAGES_ARCHIVE`");
    const operating = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "operating.md"), "utf8");
    expect(operating).toContain("a cross-database reference that PostgreSQL refuses");
    expect(operating).toContain("SELECT status, count(*) FROM staging.HUB_ACME_MESSAGES_STATUS GROUP BY status;");
  });
});
