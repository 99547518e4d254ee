/**
 * The config-row provider against embedded PostgreSQL, its methods called the way the engine calls them: create,
 * diff, update, replace (delete first, then create), read showing drift, delete.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubApiConfigRows, hubPlatConfigRows } from "../../core/rows";
import {
  configRowId,
  configRowProvider,
  deleteRow,
  readRow,
  upsertRow,
  CONFIG_ROW_PROVIDER_VERSION,
  type ConfigRowState,
} from "../../providers/sqlRows";
import { warehouseWithBaseline, type Warehouse } from "../fixtures/warehouse";

let wh: Warehouse;

beforeAll(async () => {
  wh = await warehouseWithBaseline("rows");
});
afterAll(async () => {
  await wh?.drop();
});

function apiRow(index = 0): ConfigRowState {
  const row = hubApiConfigRows(wh.config)[index];
  return {
    target: wh.target,
    schema: "staging",
    table: row.table,
    key: row.key,
    values: row.values,
    version: CONFIG_ROW_PROVIDER_VERSION,
  };
}

const apiRowsInDb = (tenantId: string) =>
  wh.query<{ hub_api_name: string; hub_api_url: string; hub_region: string }>(
    "SELECT hub_api_name, hub_api_url, hub_region FROM staging.hub_api_config WHERE hub_tenant_id = $1 ORDER BY hub_api_name",
    [tenantId],
  );

describe("config row provider", () => {
  it("creates a row with an upsert and returns its key as id", async () => {
    const inputs = apiRow(0);
    const created = await configRowProvider.create(inputs);
    expect(created.id).toBe(`staging.hub_api_config/hub_api_name=ERS,hub_tenant_id=${inputs.key.hub_tenant_id}`);
    expect(created.outs).toEqual(inputs);
    expect(await apiRowsInDb(inputs.key.hub_tenant_id)).toEqual([
      { hub_api_name: "ERS", hub_api_url: inputs.values.hub_api_url, hub_region: "US" },
    ]);
    // Creating it again (a retried create) is harmless.
    await configRowProvider.create(inputs);
    expect(await apiRowsInDb(inputs.key.hub_tenant_id)).toHaveLength(1);
  });

  it("diffs: no change, an update in place for values, a replace (deleted first) for key, table or schema", async () => {
    const olds = apiRow(0);
    expect(await configRowProvider.diff!("id", olds, { ...olds })).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    // Key order does not matter.
    const reordered = { ...olds, key: Object.fromEntries(Object.entries(olds.key).reverse()) };
    expect((await configRowProvider.diff!("id", olds, reordered)).changes).toBe(false);
    expect(
      await configRowProvider.diff!("id", olds, {
        ...olds,
        values: { ...olds.values, hub_api_url: "https://hub-ext-qa.hub.example.com/ers2/api/" },
      }),
    ).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(await configRowProvider.diff!("id", olds, { ...olds, version: olds.version + 1 })).toMatchObject({
      changes: true,
      replaces: [],
    });
    expect(await configRowProvider.diff!("id", olds, { ...olds, key: { ...olds.key, hub_api_name: "CFG" } })).toEqual({
      changes: true,
      replaces: ["key"],
      deleteBeforeReplace: true,
    });
    expect(await configRowProvider.diff!("id", olds, { ...olds, table: "HUB_PLAT_CONFIG" })).toMatchObject({
      replaces: ["table"],
      deleteBeforeReplace: true,
    });
    expect(await configRowProvider.diff!("id", olds, { ...olds, schema: "other" })).toMatchObject({
      replaces: ["schema"],
    });
    // Case only: PostgreSQL folds unquoted names, so HUB_API_CONFIG and hub_api_config are one table.
    expect((await configRowProvider.diff!("id", olds, { ...olds, table: "hub_api_config" })).changes).toBe(false);
  });

  it("updates a changed non-key field in place", async () => {
    const olds = apiRow(0);
    const news = { ...olds, values: { ...olds.values, hub_api_url: "https://hub-ext-qa.hub.example.com/ers-v2/api/" } };
    const updated = await configRowProvider.update!("id", olds, news);
    expect(updated.outs).toEqual(news);
    expect((await apiRowsInDb(olds.key.hub_tenant_id))[0].hub_api_url).toBe(
      "https://hub-ext-qa.hub.example.com/ers-v2/api/",
    );
    await configRowProvider.update!("id", news, olds);
  });

  it("replaces on a key change: the old row is deleted, the new one created", async () => {
    const olds = apiRow(0);
    const news = {
      ...olds,
      key: { ...olds.key, hub_api_name: "HRSYS" },
      values: { ...olds.values, hub_api_url: wh.config.hub.environments.US!.apis.HRSYS },
    };
    const diff = await configRowProvider.diff!(configRowId(olds), olds, news);
    expect(diff.replaces).toEqual(["key"]);
    // deleteBeforeReplace: the engine deletes the old resource first.
    await configRowProvider.delete!(configRowId(olds), olds);
    const created = await configRowProvider.create(news);
    expect(created.id).toBe(configRowId(news));
    expect((await apiRowsInDb(olds.key.hub_tenant_id)).map((r) => r.hub_api_name)).toEqual(["HRSYS"]);
    await configRowProvider.delete!(created.id, news);
  });

  it("reads the row as it is in the database: drift after a change by hand, gone after a delete by hand", async () => {
    const inputs = apiRow(1);
    const { id, outs } = await configRowProvider.create(inputs);
    expect(await configRowProvider.read!(id, outs)).toEqual({ id, props: inputs, inputs });

    await wh.query(
      "UPDATE staging.HUB_API_CONFIG SET hub_region = 'EU', hub_api_url = 'https://hub-ext-qa.hub.example.com/changed/api/' WHERE hub_tenant_id = $1 AND hub_api_name = 'CFG'",
      [inputs.key.hub_tenant_id],
    );
    const drifted = await configRowProvider.read!(id, outs);
    expect(drifted.id).toBe(id);
    expect(drifted.props!.values).toEqual({
      ...inputs.values,
      hub_region: "EU",
      hub_api_url: "https://hub-ext-qa.hub.example.com/changed/api/",
    });
    // The next `up` sees the drift as a change and puts the configured values back.
    expect((await configRowProvider.diff!(id, drifted.props!, inputs)).changes).toBe(true);
    await configRowProvider.update!(id, drifted.props!, inputs);
    expect((await configRowProvider.read!(id, outs)).props!.values).toEqual(inputs.values);

    await wh.query("DELETE FROM staging.hub_api_config WHERE hub_tenant_id = $1 AND hub_api_name = 'CFG'", [
      inputs.key.hub_tenant_id,
    ]);
    expect(await configRowProvider.read!(id, outs)).toEqual({ id: "" });
  });

  it("deletes the row on destroy, and a second delete finds nothing to do", async () => {
    const inputs = apiRow(2);
    const { id } = await configRowProvider.create(inputs);
    await configRowProvider.delete!(id, inputs);
    expect(await readRow(wh.connection, { ...inputs, columns: Object.keys(inputs.values) })).toBeUndefined();
    await configRowProvider.delete!(id, inputs);
    expect(await deleteRow(wh.connection, inputs)).toBe(false);
  });

  it("writes HUB_PLAT_CONFIG rows with nulls, through a connection URL as local mode does", async () => {
    const row = hubPlatConfigRows(wh.config)[0];
    await upsertRow(wh.url, { schema: "staging", ...row });
    const [stored] = await wh.query(
      "SELECT * FROM staging.hub_plat_config WHERE plat_client_name = $1 AND plat_region = $2",
      [row.key.plat_client_name, row.key.plat_region],
    );
    expect(stored).toEqual({ ...row.key, ...row.values });
    expect(stored.secure_view_source).toBeNull();
    expect(
      await readRow(wh.url, { schema: "staging", table: row.table, key: row.key, columns: Object.keys(row.values) }),
    ).toEqual(row.values);
  });

  it("passes values as parameters and accepts only plain identifiers", async () => {
    const inputs = apiRow(0);
    const tricky = {
      ...inputs,
      values: { ...inputs.values, hub_environment_name: "x'); DROP TABLE staging.hub_api_config; --" },
    };
    await configRowProvider.create(tricky);
    expect(
      (
        await wh.query(
          "SELECT hub_environment_name FROM staging.hub_api_config WHERE hub_tenant_id = $1 AND hub_api_name = 'ERS'",
          [inputs.key.hub_tenant_id],
        )
      )[0].hub_environment_name,
    ).toBe(tricky.values.hub_environment_name);

    const bad = { ...inputs, table: 'hub_api_config"; DROP TABLE x; --' };
    expect((await configRowProvider.check!(inputs, bad)).failures).toEqual([
      { property: "table", reason: "must be a safe SQL identifier" },
    ]);
    await expect(upsertRow(wh.connection, bad)).rejects.toThrow(/is not a safe SQL identifier/);
    await expect(upsertRow(wh.connection, { ...inputs, values: { "hub_api_url = 'x'; --": "v" } })).rejects.toThrow(
      /is not a safe SQL identifier/,
    );
    expect((await configRowProvider.check!(inputs, { ...inputs, key: {} })).failures).toEqual([
      { property: "key", reason: "must name at least one key column" },
    ]);
    expect((await configRowProvider.check!(inputs, { ...inputs, values: { hub_tenant_id: "x" } })).failures).toEqual([
      { property: "values", reason: "column hub_tenant_id appears in both key and values" },
    ]);
    expect(await configRowProvider.check!(inputs, inputs)).toEqual({ inputs });
  });

  it("reports a database error with the row, not the password", async () => {
    const inputs = { ...apiRow(0), values: { ...apiRow(0).values, hub_regio: "US" } };
    const error = await configRowProvider.create(inputs).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^upsert into staging\.HUB_API_CONFIG \(staging\.hub_api_config\/hub_api_name=ERS,.*\) failed: column "hub_regio" .*does not exist/,
    );
    expect((error as Error).message).not.toContain(wh.connection.password);
  });
});

describe("config rows in the specification's tables, which have no key constraint", () => {
  const rowsOf = (inputs: ConfigRowState) =>
    wh.query<{ hub_api_url: string }>(
      "SELECT hub_api_url FROM staging.hub_api_config WHERE hub_tenant_id = $1 AND hub_api_name = $2",
      [inputs.key.hub_tenant_id, inputs.key.hub_api_name],
    );

  it("keeps one row per key itself: upserts of one key at once leave one row, with the last values", async () => {
    const inputs = apiRow(1);
    expect(
      await wh.query(
        "SELECT conname FROM pg_constraint WHERE conrelid = 'staging.hub_api_config'::regclass AND contype IN ('p', 'u')",
      ),
    ).toEqual([]);
    const urls = Array.from({ length: 6 }, (_, i) => `https://hub-ext-qa.hub.example.com/ers-${i}/api/`);
    await Promise.all(
      urls.map((url) => upsertRow(wh.connection, { ...inputs, values: { ...inputs.values, hub_api_url: url } })),
    );
    const rows = await rowsOf(inputs);
    expect(rows).toHaveLength(1);
    expect(urls).toContain(rows[0].hub_api_url);
    await deleteRow(wh.connection, inputs);
  });

  it("refuses a key that matches two rows, naming it, and changes nothing", async () => {
    const inputs = apiRow(2);
    const insert =
      "INSERT INTO staging.hub_api_config (hub_api_name, hub_api_url, hub_environment_name, hub_region, hub_tenant_id) VALUES ($1, $2, 'hub-qa', 'US', $3)";
    for (const url of ["https://a-ext-x/api/", "https://b-ext-x/api/"])
      await wh.query(insert, [inputs.key.hub_api_name, url, inputs.key.hub_tenant_id]);
    const error = await configRowProvider.create(inputs).catch((e: Error) => e);
    expect((error as Error).message).toBe(
      `upsert into staging.HUB_API_CONFIG (${configRowId(inputs)}) failed: the key matches 2 rows; this project keeps one row per key: delete all but one by hand (nothing was changed)`,
    );
    expect((await rowsOf(inputs)).map((r) => r.hub_api_url).sort()).toEqual([
      "https://a-ext-x/api/",
      "https://b-ext-x/api/",
    ]);
    await deleteRow(wh.connection, inputs);
  });
});

describe("HUB_PLAT_CONFIG rows: one per (plat_client_name, plat_region)", () => {
  /** The row of platform tenant `index` as components/warehouse/configTables.ts declares it. */
  function platRow(index: number, clientName = "ACME"): ConfigRowState {
    const row = hubPlatConfigRows({ ...wh.config, clientName })[index];
    return {
      target: wh.target,
      schema: "staging",
      table: row.table,
      key: row.key,
      values: row.values,
      version: CONFIG_ROW_PROVIDER_VERSION,
    };
  }
  const platRows = () =>
    wh.query<{ plat_client_name: string; plat_region: string; hub_tenant_id: string; hub_destination: string }>(
      "SELECT plat_client_name, plat_region, hub_tenant_id, hub_destination FROM staging.hub_plat_config ORDER BY 1, 2",
    );

  it("lets several platform tenants feed one hub tenant, and another client use the same platform region", async () => {
    // qa: US and CA feed the US hub tenant, EU the EU one.
    const acme = [0, 1, 2].map((i) => platRow(i));
    const other = platRow(0, "GLOBEX");
    for (const row of [...acme, other]) await configRowProvider.create(row);
    const us = wh.config.hubTenants[0].hubTenantId;
    const eu = wh.config.hubTenants[1].hubTenantId;
    expect(await platRows()).toEqual([
      { plat_client_name: "ACME", plat_region: "CA", hub_tenant_id: us, hub_destination: "HUB_MQ_US_QA" },
      { plat_client_name: "ACME", plat_region: "EU", hub_tenant_id: eu, hub_destination: "HUB_MQ_EU_QA" },
      { plat_client_name: "ACME", plat_region: "US", hub_tenant_id: us, hub_destination: "HUB_MQ_US_QA" },
      { plat_client_name: "GLOBEX", plat_region: "US", hub_tenant_id: us, hub_destination: "HUB_MQ_US_QA" },
    ]);

    // Removing one client's platform tenant touches no other row.
    await configRowProvider.delete!(configRowId(acme[0]), acme[0]);
    expect((await platRows()).map((r) => `${r.plat_client_name}/${r.plat_region}`)).toEqual([
      "ACME/CA",
      "ACME/EU",
      "GLOBEX/US",
    ]);
    for (const row of [...acme.slice(1), other]) await configRowProvider.delete!(configRowId(row), row);
    expect(await platRows()).toEqual([]);
  });

  it("re-points a platform tenant at another hub tenant with an update in place", async () => {
    const olds = platRow(1); // CA → the US hub tenant
    await configRowProvider.create(olds);
    const eu = wh.config.hubTenants[1];
    const news = {
      ...olds,
      values: {
        ...olds.values,
        hub_tenant_id: eu.hubTenantId,
        hub_tenant_code: eu.hubTenantCode,
        hub_destination: "HUB_MQ_EU_QA",
      },
    };
    expect(await configRowProvider.diff!(configRowId(olds), olds, news)).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    await configRowProvider.update!(configRowId(olds), olds, news);
    expect(await platRows()).toEqual([
      { plat_client_name: "ACME", plat_region: "CA", hub_tenant_id: eu.hubTenantId, hub_destination: "HUB_MQ_EU_QA" },
    ]);
    await configRowProvider.delete!(configRowId(news), news);
  });
});
