/**
 * The admin login's prerequisites from catalog facts (core/warehousePrerequisites.ts): what `probe --warehouse` lists
 * and the SQL its DBA runs, for each way a warehouse can stand. test/operate/warehouseProbe.int.test.ts reads the
 * facts from a real server and runs the statements.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { configFromEngine } from "../../config/load";
import { schemaOnly } from "../../core/naming";
import { fixtureStack } from "../fixtures/stacks";
import {
  connectPrerequisite,
  missingStatements,
  sqlIdent,
  warehousePrerequisites,
  type RoleFacts,
  type WarehouseFacts,
} from "../../core/warehousePrerequisites";

const role = (name: string, facts: Partial<RoleFacts> = {}): RoleFacts => ({
  name,
  exists: true,
  superuser: false,
  directSet: false,
  privileges: false,
  adminOption: false,
  ...facts,
});

/** RDS's master user before its DBA granted anything: LOGIN, CREATEROLE, on PostgreSQL 18. */
function fresh(edit: (f: WarehouseFacts) => void = () => {}): WarehouseFacts {
  const facts: WarehouseFacts = {
    serverVersion: 180004,
    login: { name: "platform_admin", superuser: false, createRole: true, inherit: true },
    database: { name: "PLATDB", owner: "platdb_owner", create: false, connectWithGrantOption: false },
    publishSchema: "publish",
    stagingSchema: "staging",
    objects: [
      { kind: "schema", schema: "publish", owner: "hr_loader" },
      { kind: "table", schema: "publish", name: "employee", owner: "hr_loader" },
      { kind: "table", schema: "publish", name: "employee_address", owner: "hr_loader" },
    ],
    publishTableOwners: ["hr_loader"],
    taskRole: "hub_export_acme_qa",
    roles: [role("hr_loader"), role("hub_export_acme_qa", { exists: false })],
  };
  edit(facts);
  return facts;
}

const statements = (facts: WarehouseFacts) => missingStatements(warehousePrerequisites(facts));

describe("the admin login's prerequisites", () => {
  it("a fresh login like RDS's master user: CREATE, CONNECT WITH GRANT OPTION and the loader's membership, as SQL", () => {
    const prerequisites = warehousePrerequisites(fresh());
    expect(prerequisites.filter((p) => !p.holds).map((p) => p.check)).toEqual([
      "CREATE on database PLATDB: the baseline creates the staging schema",
      "CONNECT on database PLATDB WITH GRANT OPTION (or its ownership): the task role's CONNECT (without it PostgreSQL only warns, and grants nothing)",
      "a member of hr_loader WITH INHERIT TRUE, SET TRUE: owner of schema publish, 2 tables in publish; a loader of the publish schema (hubExport:database.publishTableOwners)",
    ]);
    expect(missingStatements(prerequisites)).toEqual([
      'GRANT CREATE ON DATABASE "PLATDB" TO "platform_admin";',
      'GRANT CONNECT ON DATABASE "PLATDB" TO "platform_admin" WITH GRANT OPTION;',
      'GRANT "hr_loader" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
    ]);
    // The database's owner is nobody's business here: no statement names it.
    expect(JSON.stringify(prerequisites)).not.toContain("platdb_owner");
  });

  it("nothing to run once they hold; ownership of everything needs no membership", () => {
    const granted = fresh((f) => {
      f.database = { ...f.database, create: true, connectWithGrantOption: true };
      f.roles[0] = role("hr_loader", { directSet: true, privileges: true });
    });
    expect(statements(granted)).toEqual([]);
    const owner = fresh((f) => {
      f.database = { ...f.database, owner: "platform_admin", create: true, connectWithGrantOption: true };
      f.objects = f.objects.map((o) => ({ ...o, owner: "platform_admin" }));
      f.publishTableOwners = [];
    });
    expect(statements(owner)).toEqual([]);
  });

  it("a membership counts when the provider sees it (a direct one WITH SET) and it carries the privileges (INHERIT), or with ADMIN OPTION", () => {
    const withRole = (facts: Partial<RoleFacts>) =>
      statements(
        fresh((f) => {
          f.database = { ...f.database, create: true, connectWithGrantOption: true };
          f.roles[0] = role("hr_loader", facts);
        }),
      );
    const grant = ['GRANT "hr_loader" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;'];
    // SET without INHERIT: the provider grants nothing, then ALTER DEFAULT PRIVILEGES FOR ROLE is refused.
    expect(withRole({ directSet: true, privileges: false })).toEqual(grant);
    // INHERIT without SET (or only through another role): the provider tries GRANT, which needs ADMIN OPTION.
    expect(withRole({ directSet: false, privileges: true })).toEqual(grant);
    // ADMIN OPTION (a role the login created): the provider grants it to itself and revokes it after.
    expect(withRole({ adminOption: true })).toEqual([]);
  });

  it("the roles come from the catalog (every owner in both schemas, pg_database_owner resolved) and from publishTableOwners", () => {
    const facts = fresh((f) => {
      f.database = { ...f.database, create: true, connectWithGrantOption: true };
      f.objects = [
        { kind: "schema", schema: "publish", owner: "pg_database_owner" },
        { kind: "table", schema: "publish", name: "employee", owner: "hr_loader" },
        { kind: "view", schema: "publish", name: "employee_v", owner: "reporting" },
        { kind: "schema", schema: "staging", owner: "other_pipeline" },
        { kind: "table", schema: "staging", name: "hub_api_config", owner: "other_pipeline" },
        { kind: "table", schema: "staging", name: "hub_acme_messages", owner: "platform_admin" },
      ];
      f.publishTableOwners = ["hr_loader", "hr_loader_eu"];
      f.roles = ["platdb_owner", "hr_loader", "reporting", "other_pipeline", "hr_loader_eu"].map((r) => role(r));
    });
    expect(statements(facts)).toEqual([
      'GRANT "platdb_owner" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
      'GRANT "hr_loader" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
      'GRANT "reporting" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
      'GRANT "other_pipeline" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
      'GRANT "hr_loader_eu" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
    ]);
    const checks = warehousePrerequisites(facts).map((p) => p.check);
    expect(checks).toContain(
      "a member of other_pipeline WITH INHERIT TRUE, SET TRUE: owner of schema staging, table staging.hub_api_config",
    );
    expect(checks).toContain(
      "a member of hr_loader_eu WITH INHERIT TRUE, SET TRUE: a loader of the publish schema (hubExport:database.publishTableOwners)",
    );
  });

  it("a publish schema that is missing is the platform's to create, owned by its loader; a loader that is missing is created first", () => {
    const facts = fresh((f) => {
      f.objects = [];
      f.roles = [role("hr_loader", { exists: false })];
    });
    expect(statements(facts)).toEqual([
      'GRANT CREATE ON DATABASE "PLATDB" TO "platform_admin";',
      'GRANT CONNECT ON DATABASE "PLATDB" TO "platform_admin" WITH GRANT OPTION;',
      'CREATE ROLE "hr_loader" NOLOGIN;',
      'CREATE SCHEMA "publish" AUTHORIZATION "hr_loader";',
      'GRANT "hr_loader" TO "platform_admin" WITH INHERIT TRUE, SET TRUE;',
    ]);
    const alone = fresh((f) => {
      f.objects = [];
      f.publishTableOwners = [];
    });
    expect(statements(alone)).toContain('CREATE SCHEMA "publish" AUTHORIZATION "platform_admin";');
  });

  it("a superuser's objects: handed to the login in staging, granted WITH GRANT OPTION in publish (a superuser's membership never)", () => {
    const facts = fresh((f) => {
      f.database = { ...f.database, create: true, connectWithGrantOption: true };
      f.objects = [
        { kind: "schema", schema: "publish", owner: "postgres" },
        { kind: "table", schema: "publish", name: "employee", owner: "postgres" },
        { kind: "schema", schema: "staging", owner: "postgres" },
        { kind: "table", schema: "staging", name: "hub_intake_job", owner: "postgres" },
        { kind: "sequence", schema: "staging", name: "free_seq", owner: "postgres" },
        { kind: "routine", schema: "staging", name: "hub_acme_oldest_xact()", owner: "postgres" },
      ];
      f.publishTableOwners = [];
      f.roles = [role("postgres", { superuser: true })];
    });
    expect(statements(facts)).toEqual([
      'GRANT USAGE ON SCHEMA "publish" TO "platform_admin" WITH GRANT OPTION;',
      'GRANT SELECT ON "publish"."employee" TO "platform_admin" WITH GRANT OPTION;',
      'ALTER SCHEMA "staging" OWNER TO "platform_admin";',
      'ALTER TABLE "staging"."hub_intake_job" OWNER TO "platform_admin";',
      'ALTER SEQUENCE "staging"."free_seq" OWNER TO "platform_admin";',
      'ALTER ROUTINE "staging"."hub_acme_oldest_xact"() OWNER TO "platform_admin";',
    ]);
    expect(statements(facts).join("\n")).not.toMatch(/GRANT "postgres"/);
  });

  it("a task role that exists already needs ADMIN OPTION (its password, `destroy`); one the login created has it", () => {
    const existing = (adminOption: boolean) =>
      statements(
        fresh((f) => {
          f.database = { ...f.database, create: true, connectWithGrantOption: true };
          f.roles = [
            role("hr_loader", { directSet: true, privileges: true }),
            role("hub_export_acme_qa", { adminOption }),
          ];
        }),
      );
    expect(existing(false)).toEqual(['GRANT "hub_export_acme_qa" TO "platform_admin" WITH ADMIN OPTION;']);
    expect(existing(true)).toEqual([]);
  });

  it("CREATEROLE; before PostgreSQL 16 a plain membership and INHERIT on the login", () => {
    const old = fresh((f) => {
      f.serverVersion = 150008;
      f.login = { ...f.login, createRole: false, inherit: false };
    });
    expect(statements(old)).toEqual([
      'ALTER ROLE "platform_admin" CREATEROLE;',
      'ALTER ROLE "platform_admin" INHERIT;',
      'GRANT CREATE ON DATABASE "PLATDB" TO "platform_admin";',
      'GRANT CONNECT ON DATABASE "PLATDB" TO "platform_admin" WITH GRANT OPTION;',
      'GRANT "hr_loader" TO "platform_admin";',
    ]);
  });

  it("a superuser login holds everything; a loader that is a superuser cannot be covered by a membership", () => {
    expect(statements(fresh((f) => (f.login = { ...f.login, superuser: true })))).toEqual([]);
    const superLoader = fresh((f) => {
      f.database = { ...f.database, create: true, connectWithGrantOption: true };
      f.objects = [{ kind: "schema", schema: "publish", owner: "platform_admin" }];
      f.publishTableOwners = ["postgres"];
      f.roles = [role("postgres", { superuser: true })];
    });
    expect(statements(superLoader)).toEqual([
      "-- name a loader role that is not a superuser in hubExport:database.publishTableOwners instead of postgres",
    ]);
  });

  it("quotes every identifier as PostgreSQL does; a login refused at the door gets CONNECT first", () => {
    expect(sqlIdent('we"ird')).toBe('"we""ird"');
    expect(missingStatements([connectPrerequisite("PLATDB", "platform_admin")])).toEqual([
      'GRANT CONNECT ON DATABASE "PLATDB" TO "platform_admin" WITH GRANT OPTION;',
    ]);
  });
});

describe("docs/pulumi.md's prerequisites", () => {
  it("show what the probe prints for their example: qa's admin on a new warehouse whose publish schema hr_loader owns", () => {
    const page = fs.readFileSync(path.join(__dirname, "..", "..", "docs", "pulumi.md"), "utf8");
    const section = page.slice(page.indexOf("### Prerequisites"), page.indexOf("### Values, by who supplies them"));
    const block = /```sql\n-- not run here: [^\n]+\n([\s\S]*?)```/.exec(section);
    expect(block, "the SQL block under the prerequisites table").not.toBeNull();
    const qa = configFromEngine(fixtureStack("qa").config, "qa");
    const publish = schemaOnly(qa.publishSchema);
    const example: WarehouseFacts = {
      serverVersion: 160000,
      login: { name: qa.database.admin.username, superuser: false, createRole: true, inherit: true },
      database: { name: qa.database.database, owner: "rdsadmin", create: false, connectWithGrantOption: false },
      publishSchema: publish,
      stagingSchema: schemaOnly(qa.stagingSchema),
      objects: [
        { kind: "schema", schema: publish, owner: "hr_loader" },
        { kind: "table", schema: publish, name: "employee", owner: "hr_loader" },
      ],
      publishTableOwners: ["hr_loader"],
      taskRole: qa.database.task.username,
      roles: [role("hr_loader"), role(qa.database.task.username, { exists: false })],
    };
    expect(block![1].trimEnd().split("\n")).toEqual(statements(example));
  });
});
