/**
 * hubExport:database.publishTableOwners: the roles besides the admin that create tables in the publish schema (the HR
 * system's loader). Each gets default privileges that let the task read the tables it creates later; without them the
 * task would get "permission denied" on such a table, and `pulumi refresh` would show the publish grant drifting.
 */
import { describe, expect, it } from "vitest";
import { editKey, getKey, fixtureStack } from "../fixtures/stacks";
import { inputs, ofType, planOf } from "../fixtures/plan";
import { configFromEngine } from "../../config/load";

const DEFAULTS = "postgresql:index/defaultPrivileges:DefaultPrivileges";
type Database = { admin: { username: string }; task: { username: string }; publishTableOwners?: string[] };

describe("default privileges on the publish schema", () => {
  it("cover the admin's tables by default, and those of every role the config names", async () => {
    const qa = fixtureStack("qa").config;
    const db = getKey<Database>(qa, "database");
    const none = await planOf(qa, "qa");
    expect(ofType(none, DEFAULTS).map((d) => inputs(d).owner)).toEqual([db.admin.username]);

    const withLoaders = editKey<Database>(qa, "database", (d) => ({
      ...d,
      publishTableOwners: ["hr_loader", "hr_loader_eu"],
    }));
    const run = await planOf(withLoaders, "qa");
    const defaults = ofType(run, DEFAULTS);
    expect(defaults.map((d) => d.name)).toEqual([
      "hub-export-warehouse/default/publish-tables",
      "hub-export-warehouse/default/publish-tables/hr_loader",
      "hub-export-warehouse/default/publish-tables/hr_loader_eu",
    ]);
    for (const [i, owner] of [db.admin.username, "hr_loader", "hr_loader_eu"].entries()) {
      expect(inputs(defaults[i])).toEqual({
        database: "PLATDB",
        role: db.task.username,
        owner,
        schema: "publish",
        objectType: "table",
        privileges: ["SELECT"],
      });
      // Replaced delete-first like every grant: the old one's REVOKE never takes back the new one's GRANT.
      expect(defaults[i].options.deleteBeforeReplace).toBe(true);
    }
  });

  it("refuses the admin (covered already) and a role named twice", () => {
    const qa = fixtureStack("qa").config;
    const admin = getKey<Database>(qa, "database").admin.username;
    const config = (owners: string[]) => () =>
      configFromEngine(
        editKey<Database>(qa, "database", (d) => ({ ...d, publishTableOwners: owners })),
        "qa",
      );
    expect(config([admin])).toThrow(
      /hubExport:database\.publishTableOwners\[0\]: is the admin: the tables it creates are covered already/,
    );
    expect(config(["hr_loader", "HR_LOADER"])).toThrow(
      /hubExport:database\.publishTableOwners\[1\]: names HR_LOADER twice/,
    );
    expect(config(["hr loader"])).toThrow(
      /hubExport:database\.publishTableOwners\[0\]: role must be a safe SQL identifier/,
    );
  });
});
