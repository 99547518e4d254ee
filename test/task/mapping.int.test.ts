import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type ExportFixture } from "../support/exportFixture";
import { runTask, taskBundle } from "../support/taskProcess";
import { TENANTS } from "../../bench/platform";
import { extractChunkSql, extractChunkValues } from "../../task/mapping/extractSql";
import { entitiesText } from "../../task/mapping/messageBody";
import { publishSchemaSql } from "../../task/model/schema";
import { SAMPLE_LOADER_ROLE } from "../../task/model/sampleData";

const TX = "0f1e2d3c-4b5a-4978-8877-665544332211";

describe("mapping employees to User entities", () => {
  let f: ExportFixture;
  beforeAll(async () => {
    [f] = await Promise.all([
      exportFixture({
        parameters: { records_per_hub_message: 3, records_per_ers_request: 5 },
        emulator: { ersMaxBatch: 5 },
      }),
      taskBundle(),
    ]);
    const s = f.platform.publishSchema;
    const ddl = publishSchemaSql(s);
    // The HR loader's tables, as the platform's are: the task (the admin login) reads them as its member.
    await f.pool.query(
      [ddl.schema, `SET ROLE ${SAMPLE_LOADER_ROLE};`, ddl.tables, "RESET ROLE;", ddl.indexes].join("\n"),
    );
    await f.pool.query(`
      INSERT INTO ${s}.employee VALUES
        ('A1', 'Ann', 'Lee', NULL, 'ann@example.com', 'US', 'US', NULL, NULL, 'ACTV', 'SALES_REP', '2020-01-01', NULL, true, '2024-01-01'),
        ('A2', 'Bo', 'Kim', 'B', NULL, 'CA', 'US', 'Engineering', 'Male', 'TERM_INV', 'SW_ENGINEER', '2019-05-01', '2023-02-01', false, '2024-01-02'),
        ('A3', 'Cy', 'Ng', NULL, NULL, 'US', 'US', 'Legal', 'Female', 'RETIRED', NULL, '2001-01-01', '2022-01-01', false, '2024-01-03'),
        ('A4', 'Di', 'Oz', NULL, NULL, 'US', 'US', 'HR', 'Female', 'ACTV', NULL, '2001-01-01', NULL, true, '2024-01-04'),
        ('B1', 'Ed', 'Fox', NULL, NULL, 'DE', 'EU', 'Sales', NULL, 'ACTV', 'SALES_REP', '2021-01-01', NULL, true, '2024-01-05'),
        ('C1', 'Flo', 'Ito', NULL, NULL, 'JP', 'APAC', 'Sales', 'Female', 'ACTV', 'SALES_REP', '2021-01-01', NULL, true, '2024-01-05');
      INSERT INTO ${s}.employee_address VALUES ('A1-2', 'A1', 'WORK', '2 Main St', NULL, 'Springfield', 'IL', '62701', 'US', false, '2024-01-01'),
                                               ('A1-1', 'A1', 'HOME', '1 Elm St', 'Apt 3', 'Springfield', 'IL', '62701', 'US', true, '2024-03-01');
      INSERT INTO ${s}.employee_communication VALUES ('A1-C1', 'A1', 'MOBILE', '+1-555-0100', true, true, '2024-01-01'),
                                                     ('A1-C2', 'A1', 'WEB_ADDR', 'https://ann.example.com', false, false, '2024-01-01');
      INSERT INTO ${s}.employee_education VALUES ('A1-E1', 'A1', 'State University', 'BSc', 'Economics', 'US', '2015-06-30', true, '2024-01-01');
      INSERT INTO ${s}.employee_dependent VALUES ('A1-D1', 'A1', 'Kid', 'Lee', NULL, 'CHILD', '2018-01-01', 'US', true, '2024-01-01');
      INSERT INTO ${s}.employee_contact VALUES ('A1-K1', 'A1', 'Max', 'Lee', 'SPOUSE', '+1-555-0101', NULL, 'US', false, '2024-01-01');
    `);
  });
  afterAll(async () => f?.close());

  async function extractAll(
    perMessage: number,
  ): Promise<
    { body: string; record_count: number; hub_tenant_id: string; country_code: string; employee_ids: string[] }[]
  > {
    const t = {
      publishSchema: f.platform.publishSchema,
      messages: f.t.messages,
      archive: f.t.archive,
      watermark: f.t.watermark,
    };
    await f.pool.query("BEGIN");
    try {
      await f.pool.query(
        extractChunkSql(t, perMessage),
        extractChunkValues(
          {
            transactionId: TX,
            clientName: "ACME",
            tenantIds: [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId],
            destinations: ["HUB_MQ_US_TEST", "HUB_MQ_EU_TEST"],
            platRegions: ["US", "EU"],
            idlDate: "1901-01-01T00:00:00",
            upperBound: "2100-01-01T00:00:00",
            after: "",
            through: "ZZZ",
            seqOffset: 0,
            systemCode: "HRSYS",
            empTypeDefault: "Sales",
            empGenderDefault: "Not_Declared",
            createdAt: "2026-11-22T00:00:00Z",
            final: true,
          },
          perMessage,
        ),
      );
      const { rows } = await f.pool.query(
        `SELECT message_id, body, record_count, hub_tenant_id, country_code, employee_ids FROM ${f.t.archive} ORDER BY seq`,
      );
      // The body is written once, to _ARCHIVE; the run's work queue gets the same messages, ids only.
      const { rows: queued } = await f.pool.query(
        `SELECT message_id, record_count, hub_tenant_id FROM ${f.t.messages} ORDER BY seq`,
      );
      expect(queued).toEqual(
        rows.map((r) => ({ message_id: r.message_id, record_count: r.record_count, hub_tenant_id: r.hub_tenant_id })),
      );
      return rows;
    } finally {
      await f.pool.query("ROLLBACK");
    }
  }

  it("maps every CLS code field, applies EmpTypeDefault and EmpGenderDefault, and ACTV/INAC", async () => {
    const messages = await extractAll(1);
    expect(messages).toHaveLength(5); // the APAC employee has no tenant
    const users = messages.map((m) => JSON.parse(m.body));
    const byId = Object.fromEntries(users.map((b) => [b.entities[0].UserId, b.entities[0]]));
    expect(users[0].header).toMatchObject({
      transactionId: TX,
      systemCode: "HRSYS",
      dataDomainCode: "EMPL",
      entityName: "User",
      recordCount: 1,
    });
    expect(byId.A1).toMatchObject({
      CountryCode: "US",
      UserType: "Sales",
      Gender: "Not_Declared",
      Status: "ACTV",
      EmployeeStatusCode: "ACTV",
      RoleCode: "SALES_REP",
      HireDate: "2020-01-01",
      TerminationDate: null,
    });
    expect(byId.A2).toMatchObject({
      CountryCode: "CA",
      UserType: "Engineering",
      Gender: "Male",
      Status: "INAC",
      EmployeeStatusCode: "TERM_INV",
      TerminationDate: "2023-02-01",
    });
    expect(byId.B1).toMatchObject({ UserType: "Sales", Gender: "Not_Declared", EmployeeStatusCode: "ACTV" });
    const a1 = byId.A1;
    expect(a1.UserAddress.map((a: { AddressId: string }) => a.AddressId)).toEqual(["A1-1", "A1-2"]);
    expect(a1.UserAddress[0]).toMatchObject({
      AddressType: "HOME",
      CountryCode: "US",
      Status: "ACTV",
      AddressLine2: "Apt 3",
    });
    expect(a1.UserAddress[1]).toMatchObject({ AddressType: "WORK", Status: "INAC" });
    expect(a1.UserCommunication).toEqual([
      { CommunicationId: "A1-C1", CommunicationType: "MOBILE", Value: "+1-555-0100", IsPrimary: true, Status: "ACTV" },
      {
        CommunicationId: "A1-C2",
        CommunicationType: "WEB_ADDR",
        Value: "https://ann.example.com",
        IsPrimary: false,
        Status: "INAC",
      },
    ]);
    expect(a1.UserEducation[0]).toMatchObject({ Status: "ACTV", CountryCode: "US" });
    expect(a1.UserDependent[0]).toMatchObject({
      Gender: null,
      Relationship: "CHILD",
      Status: "ACTV",
      CountryCode: "US",
    });
    expect(a1.UserContact[0]).toMatchObject({ Relationship: "SPOUSE", Status: "INAC", CountryCode: "US" });
    expect(byId.A3.UserAddress).toEqual([]);
    // The ERS phase cuts the entities back out of the body without parsing it.
    expect(JSON.parse(`[${entitiesText(messages[0].body)}]`)).toEqual(users[0].entities);
  });

  it("groups records_per_hub_message employees of one tenant and country per message", async () => {
    const messages = await extractAll(3);
    const shape = messages.map((m) => [m.country_code, m.record_count, m.employee_ids]);
    expect(shape).toEqual(
      [
        ["DE", 1, ["B1"]],
        ["CA", 1, ["A2"]],
        ["US", 3, ["A1", "A3", "A4"]],
      ].sort(
        (a, b) =>
          messages.findIndex((m) => m.country_code === a[0]) - messages.findIndex((m) => m.country_code === b[0]),
      ),
    );
    for (const m of messages)
      expect(JSON.parse(m.body).entities.map((e: { UserId: string }) => e.UserId)).toEqual(m.employee_ids);
  });

  it("sends ERS batches of at most records_per_ers_request entities", async () => {
    // 40 more US employees: 44 US entities in messages of 3, sent to ERS in requests of 5.
    await f.pool.query(
      `INSERT INTO ${f.platform.publishSchema}.employee SELECT 'X' || lpad(g::text, 3, '0'), 'N', 'M', NULL, NULL, 'US', 'US', NULL, NULL, 'ACTV', NULL, '2020-01-01', NULL, true, '2024-02-01' FROM generate_series(1, 40) g`,
    );
    const result = await runTask(f.platform.args, { HUB_EXPORT_CHUNK_SIZE: "1000" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const ers = f.emulator.state().ers;
    expect(ers[TENANTS.US.hubTenantId].entities).toBe(44);
    expect(ers[TENANTS.EU.hubTenantId].entities).toBe(1);
    // The emulator answers 413 to a batch over 5. Requests are filled to 5 entities (a message of 3 that does not
    // fit is split between two), all full but the last: 44 entities in 9 requests.
    expect(ers[TENANTS.US.hubTenantId].requests).toBe(Math.ceil(44 / 5));
    const { rows } = await f.pool.query(
      `SELECT max(record_count)::int AS max, sum(record_count)::int AS sum FROM ${f.t.archive}`,
    );
    expect(rows[0]).toEqual({ max: 3, sum: 45 });
  });
});
