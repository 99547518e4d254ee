/** The sample changes and the local secrets file, on their own. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { createTestDatabase } from "../support/database";
import { PROJECT_ROOT } from "../support/cli";
import { SAMPLE_BUSINESS_OBJECTS, countriesOf, seedSampleEmployees, touchEmployees } from "../../task/model/sampleData";
import { localSecrets } from "../../local/secrets";

const codes = (b: keyof typeof SAMPLE_BUSINESS_OBJECTS) => SAMPLE_BUSINESS_OBJECTS[b].map((v) => v.code);

describe("sample changes", () => {
  let db: { url: string; drop(): Promise<void> };
  let client: Client;
  beforeAll(async () => {
    db = await createTestDatabase("sample");
    client = new Client({ connectionString: db.url });
    await client.connect();
    await seedSampleEmployees(client, { schema: "publish", count: 60, seed: 2, platRegions: ["US", "UK", "AP"] });
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it("a fresh seed's countries are all in the sample Country sheet, for region names that are no country (UK, AP)", async () => {
    const { rows } = await client.query<{ country_code: string }>("SELECT DISTINCT country_code FROM publish.employee");
    for (const r of rows) expect(codes("Country")).toContain(r.country_code);
    expect(countriesOf("ZZ")).toEqual(codes("Country"));
  });

  it("changed job profiles keep codes of the sheet; asked for, they get unknown ones", async () => {
    const changed = await touchEmployees(client, { schema: "publish", count: 20, seed: 5 });
    const { rows } = await client.query<{ job_profile: string }>(
      "SELECT job_profile FROM publish.employee WHERE employee_id = ANY($1)",
      [changed],
    );
    for (const r of rows) expect(codes("Job Profile")).toContain(r.job_profile);
    const unknown = await touchEmployees(client, { schema: "publish", count: 20, seed: 6, unknownCodes: true });
    const { rows: x } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM publish.employee WHERE employee_id = ANY($1) AND job_profile LIKE '%\\_X'",
      [unknown],
    );
    expect(x[0].n).toBeGreaterThan(0);
  });

  it("an employee id '' (or any shape) is changed like the others, not a crash", async () => {
    await client.query("UPDATE publish.employee SET employee_id = '' WHERE employee_id = 'E000000002'");
    await client.query(
      "UPDATE publish.employee SET employee_id = 'X-7' WHERE employee_id = (SELECT min(employee_id) FROM publish.employee WHERE employee_id <> '')",
    );
    const changed = await touchEmployees(client, { schema: "publish", count: 62, seed: 7 });
    expect(changed.length).toBeGreaterThan(0);
  });
});

describe("local secrets", () => {
  it("an existing secrets.json is kept 0600 whatever its mode was", () => {
    fs.mkdirSync(path.join(PROJECT_ROOT, ".tmp"), { recursive: true });
    const dir = fs.mkdtempSync(path.join(PROJECT_ROOT, ".tmp", "secrets-"));
    try {
      const file = path.join(dir, "secrets.json");
      fs.writeFileSync(file, JSON.stringify({ taskPassword: "p", queues: {}, tenants: {} }), { mode: 0o644 });
      fs.chmodSync(file, 0o644);
      expect(localSecrets(file, ["US"], []).taskPassword).toBe("p");
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
