/**
 * The `cls` config key, and `hub-export cls check` on demand against a database (the embedded PostgreSQL with sample
 * employees): the stack's sheet, or one given with --sheet.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Pool } from "pg";
import { validateStackConfig, ConfigError } from "../../config/validate";
import { fixtureStackFile } from "../fixtures/stacks";
import { rawConfig } from "../support/rawConfig";
import { createTestDatabase } from "../support/database";
import { provisionPlatform, type TestPlatform } from "../../bench/platform";
import { runMain } from "../support/cli";
import { SAMPLE_BUSINESS_OBJECTS, SAMPLE_LOADER_ROLE, seedSampleEmployees } from "../../task/model/sampleData";
import { buildLoadSheet } from "../../cls/loadSheet";
import { loadSheetCsv } from "../../cls/csv";

function problems(cls: unknown): string[] {
  try {
    validateStackConfig({ ...rawConfig(), cls }, { source: "test" });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).lines.slice(1);
  }
  return [];
}

describe("hubExport:cls", () => {
  it("is optional; strict defaults to false; column mappings are per business object", () => {
    expect(validateStackConfig(rawConfig(), { source: "test" }).cls).toBeUndefined();
    const config = validateStackConfig(
      {
        ...rawConfig(),
        cls: { exports: "hr/exports", businessObjects: { "Job Profile": { file: "jp.xlsx", code: "Ref ID" } } },
      },
      { source: "test" },
    );
    expect(config.cls).toEqual({
      exports: "hr/exports",
      strict: false,
      businessObjects: { "Job Profile": { file: "jp.xlsx", code: "Ref ID" } },
    });
  });

  it("names each bad value", () => {
    expect(problems({})).toEqual(["hubExport:cls.exports: is required"]);
    expect(problems({ exports: "x", strict: "yes" })).toEqual([
      "hubExport:cls.strict: Invalid input: expected boolean, received string",
    ]);
    expect(problems({ exports: "x", businessObjects: { Position: { code: "ID" } } })[0]).toMatch(
      /^hubExport:cls\.businessObjects\.Position: /,
    );
    expect(problems({ exports: "x", businessObjects: { Country: { file: "sub/Country.csv" } } })).toEqual([
      "hubExport:cls.businessObjects.Country.file: must be a .csv or .xlsx file name in the exports folder",
    ]);
    expect(problems({ exports: "x", businessObjects: { Country: { code: " " } } })).toEqual([
      "hubExport:cls.businessObjects.Country.code: must name a column",
    ]);
    expect(problems({ exports: "x", columns: {} })).toEqual(["hubExport:cls.columns: is not a known key"]);
  });
});

describe("hub-export cls check", () => {
  let db: { url: string; name: string; drop(): Promise<void> };
  let platform: TestPlatform;
  let dir: string;
  let stackFile: string;
  beforeAll(async () => {
    db = await createTestDatabase("clscheck");
    const loopback = "http://127.0.0.1:9/api/";
    platform = await provisionPlatform({
      databaseUrl: db.url,
      hub: {
        queues: { US: "http://127.0.0.1:9", EU: "http://127.0.0.1:9", APAC: "http://127.0.0.1:9" },
        cfg: loopback,
        ers: loopback,
        hrsys: loopback,
      },
    });
    const pool = new Pool({ connectionString: db.url, max: 2 });
    try {
      await seedSampleEmployees(pool, {
        schema: platform.publishSchema,
        loaderRole: SAMPLE_LOADER_ROLE,
        count: 200,
        seed: 2,
        platRegions: ["US", "EU", "APAC"],
      });
    } finally {
      await pool.end();
    }
    dir = platform.dir;
    // The qa fixture, pointed at the test database (its secrets stay ciphertext: the check needs none).
    const doc = YAML.parse(fs.readFileSync(fixtureStackFile("qa"), "utf8"));
    doc.config["hubExport:publishSchema"] = `${db.name}.publish`;
    doc.config["hubExport:stagingSchema"] = `${db.name}.staging`;
    doc.config["hubExport:database"].database = db.name;
    stackFile = path.join(dir, "Pulumi.clscheck.yaml");
    fs.writeFileSync(stackFile, YAML.stringify(doc));
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("finds no unknown codes with the stack's sheet (built from cls/samples, the sample data's business objects)", async () => {
    const result = await runMain(["cls", "check", "--file", stackFile, "--database-url", db.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^Database: \w+ on 127\.0\.0\.1:\d+ as postgres \(--database-url\)\nCLS check of client ACME \(platform regions EU, US\): \d+ employees against 126 sheet rows \(built from cls\/samples\)\n {2}no unknown codes\n$/,
    );
  });

  it("reports per field with counts and examples and exits 1 when the sheet lacks codes", async () => {
    const values = {
      ...SAMPLE_BUSINESS_OBJECTS,
      "Job Family": SAMPLE_BUSINESS_OBJECTS["Job Family"].filter((v) => v.code !== "Legal"),
    };
    const sheet = path.join(dir, "old.csv");
    fs.writeFileSync(sheet, loadSheetCsv(buildLoadSheet(values)));
    const pool = new Pool({ connectionString: db.url, max: 1 });
    let legal: number;
    try {
      legal = (
        await pool.query(
          `SELECT count(*)::int AS n FROM ${platform.publishSchema}.employee WHERE plat_region IN ('US','EU') AND job_family = 'Legal'`,
        )
      ).rows[0].n;
    } finally {
      await pool.end();
    }
    expect(legal).toBeGreaterThan(0);
    const result = await runMain(["cls", "check", "--file", stackFile, "--database-url", db.url, "--sheet", sheet]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `  User.UserType: 1 unknown code in ${legal} employee${legal === 1 ? "" : "s"} (${legal} time${legal === 1 ? "" : "s"}), e.g. Legal (${legal})`,
    );
    const json = await runMain([
      "cls",
      "check",
      "--file",
      stackFile,
      "--database-url",
      db.url,
      "--sheet",
      sheet,
      "--json",
    ]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      sheet,
      clientName: "ACME",
      platRegions: ["EU", "US"],
      sheetRows: 125,
      fields: { "User.UserType": { codes: 1, employees: legal } },
      heldBack: { messages: 0, stillUnknown: 0 },
    });
  });

  it("says clearly when the database is not reachable or the sheet is not a load sheet", async () => {
    const bad = path.join(dir, "bad.csv");
    fs.writeFileSync(bad, "a,b\n");
    const invalid = await runMain(["cls", "check", "--file", stackFile, "--database-url", db.url, "--sheet", bad]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(
      `${bad}: is not a CLS load sheet: expected the columns SYSTEM, CLS_ENTITY_NAME, CLS_CODE_FIELD_NAME, CLS_CODE, CLS_DESCRIPTION, found a, b`,
    );
    const down = await runMain([
      "cls",
      "check",
      "--file",
      stackFile,
      "--database-url",
      "postgres://nobody:x@127.0.0.1:9/nowhere",
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^cannot connect to the database at 127\.0\.0\.1:9\/nowhere: .*ECONNREFUSED/);
    expect(down.stderr).not.toContain(":x@");
  });
});
