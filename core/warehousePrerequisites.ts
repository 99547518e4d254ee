/**
 * What the warehouse's admin login needs for `pulumi up` and `pulumi destroy`, from catalog facts (read by
 * operate/warehouseProbe.ts as that login), each missing one with the SQL statement its DBA runs. Pure: no I/O.
 *
 * Why each is needed: the postgresql provider (@pulumi/postgresql 3.18.1, cyrilgdn/terraform-provider-postgresql at
 * ff936b9) grants every owner of the schema and of its tables to the login before a Grant or DefaultPrivileges
 * (`withRolesGranted`, helpers.go:142), which on PostgreSQL 16+ needs ADMIN OPTION on that role unless the login is
 * already a direct member WITH SET; the object GRANTs and ALTER DEFAULT PRIVILEGES FOR ROLE then act with that role's
 * privileges (INHERIT). A database GRANT by a login without the grant option only warns (no privilege).
 */

/** The first PostgreSQL version (server_version_num) with membership options (INHERIT, SET) on GRANT. */
export const PG_MEMBERSHIP_OPTIONS = 160000;

/** A schema, or an object in one, as the catalog names it, with its owner. */
export interface OwnedObject {
  kind: "schema" | "table" | "view" | "materialized view" | "foreign table" | "sequence" | "routine";
  schema: string;
  /** The object's name; a routine's with its argument types, `name(integer, text)`; none for a schema. */
  name?: string;
  owner: string;
}

/** A role the login may need to act as, and how the login stands with it. */
export interface RoleFacts {
  name: string;
  exists: boolean;
  superuser: boolean;
  /** A direct membership WITH SET (PostgreSQL 16+; before: any direct membership): what the provider checks. */
  directSet: boolean;
  /** The login has the role's privileges (pg_has_role USAGE: an INHERIT membership, directly or through roles). */
  privileges: boolean;
  /** A direct membership WITH ADMIN OPTION (the login created the role, on PostgreSQL 16+). */
  adminOption: boolean;
}

export interface WarehouseFacts {
  /** server_version_num, e.g. 180004. */
  serverVersion: number;
  login: { name: string; superuser: boolean; createRole: boolean; inherit: boolean };
  database: { name: string; owner: string; create: boolean; connectWithGrantOption: boolean };
  /** Schema names only. */
  publishSchema: string;
  stagingSchema: string;
  /** The two schemas (when they exist) and the objects in them the program touches. */
  objects: OwnedObject[];
  /** hubExport:database.publishTableOwners. */
  publishTableOwners: string[];
  /** The task's login role (hubExport:database.task.username), when the program creates it. */
  taskRole?: string;
  /** Every role named above (owners, publishTableOwners, the task role). */
  roles: RoleFacts[];
}

export interface Prerequisite {
  /** What must hold, and what needs it. */
  check: string;
  holds: boolean;
  /** What the DBA runs when it does not hold, in order. */
  sql: string[];
}

/** A double-quoted SQL identifier, as PostgreSQL's quote_ident writes it (always quoted). */
export function sqlIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

const PG_DATABASE_OWNER = "pg_database_owner";

/** How a GRANT makes the login a member that the provider and PostgreSQL both accept. */
function membershipSql(role: string, login: string, serverVersion: number): string {
  const options = serverVersion >= PG_MEMBERSHIP_OPTIONS ? " WITH INHERIT TRUE, SET TRUE" : "";
  return `GRANT ${sqlIdent(role)} TO ${sqlIdent(login)}${options};`;
}

function objectText(o: OwnedObject): string {
  return o.kind === "schema" ? `schema ${o.schema}` : `${o.kind} ${o.schema}.${o.name}`;
}

function qualified(o: OwnedObject): string {
  if (o.kind === "schema") return sqlIdent(o.schema);
  // A routine's name carries its argument types: only the name is quoted.
  const paren = o.name!.indexOf("(");
  return paren < 0
    ? `${sqlIdent(o.schema)}.${sqlIdent(o.name!)}`
    : `${sqlIdent(o.schema)}.${sqlIdent(o.name!.slice(0, paren))}${o.name!.slice(paren)}`;
}

const ALTER_KIND: Record<OwnedObject["kind"], string> = {
  schema: "SCHEMA",
  table: "TABLE",
  view: "VIEW",
  "materialized view": "MATERIALIZED VIEW",
  "foreign table": "FOREIGN TABLE",
  sequence: "SEQUENCE",
  routine: "ROUTINE",
};

function counted(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

/** `schema publish, 6 tables in publish` */
function ownedText(objects: OwnedObject[]): string {
  const parts: string[] = [];
  for (const schema of [...new Set(objects.map((o) => o.schema))]) {
    const here = objects.filter((o) => o.schema === schema);
    if (here.some((o) => o.kind === "schema")) parts.push(`schema ${schema}`);
    const inside = here.filter((o) => o.kind !== "schema");
    if (inside.length === 1) parts.push(objectText(inside[0]));
    else if (inside.length > 1) {
      const kinds = new Set(inside.map((o) => o.kind));
      parts.push(`${counted(inside.length, kinds.size === 1 ? inside[0].kind : "object")} in ${schema}`);
    }
  }
  return parts.join(", ");
}

/**
 * Every prerequisite of `pulumi up` and `pulumi destroy` for this login, in the order a DBA grants them: the login's
 * own attributes, the database, the publish schema, the roles it must act as, the task role.
 */
export function warehousePrerequisites(facts: WarehouseFacts): Prerequisite[] {
  const { login, database: db, serverVersion } = facts;
  const me = sqlIdent(login.name);
  const dbName = sqlIdent(db.name);
  const out: Prerequisite[] = [{ check: `log in to database ${db.name}`, holds: true, sql: [] }];
  // A superuser passes every check PostgreSQL makes (RDS's master user is not one).
  const su = login.superuser;
  out.push({
    check: `CREATEROLE: it creates the task's login role`,
    holds: su || login.createRole,
    sql: [`ALTER ROLE ${me} CREATEROLE;`],
  });
  if (serverVersion < PG_MEMBERSHIP_OPTIONS)
    out.push({
      check: `INHERIT: it acts with the privileges of the roles below`,
      holds: su || login.inherit,
      sql: [`ALTER ROLE ${me} INHERIT;`],
    });
  out.push({
    check: `CREATE on database ${db.name}: the baseline creates the staging schema`,
    holds: su || db.create,
    sql: [`GRANT CREATE ON DATABASE ${dbName} TO ${me};`],
  });
  out.push({
    check: `CONNECT on database ${db.name} WITH GRANT OPTION (or its ownership): the task role's CONNECT (without it PostgreSQL only warns, and grants nothing)`,
    holds: su || db.connectWithGrantOption,
    sql: [`GRANT CONNECT ON DATABASE ${dbName} TO ${me} WITH GRANT OPTION;`],
  });

  const roles = new Map(facts.roles.map((r) => [r.name, r]));
  const role = (name: string): RoleFacts =>
    roles.get(name) ?? {
      name,
      exists: false,
      superuser: false,
      directSet: false,
      privileges: false,
      adminOption: false,
    };
  // A loader the config names that does not exist yet is created by the DBA, before anything names it.
  const missingLoaders = facts.publishTableOwners.filter((r) => r !== login.name && !role(r).exists);
  const createdRoles = (names: string[]) =>
    names.filter((r) => missingLoaders.includes(r)).map((r) => `CREATE ROLE ${sqlIdent(r)} NOLOGIN;`);

  const publishSchema = facts.objects.find((o) => o.kind === "schema" && o.schema === facts.publishSchema);
  if (!publishSchema) {
    // The platform's: its loaders fill it. Owned by the first of them, the grants on it need no other membership.
    const owner = facts.publishTableOwners[0] ?? login.name;
    out.push({
      check: `the publish schema ${facts.publishSchema} exists (the platform's: the stack reads it, never creates it)`,
      holds: false,
      sql: [
        ...createdRoles([owner]),
        `CREATE SCHEMA ${sqlIdent(facts.publishSchema)} AUTHORIZATION ${sqlIdent(owner)};`,
      ],
    });
  }

  // The roles the login acts as: the owners of what it grants on (publish) or changes (staging), and the loaders.
  const resolve = (owner: string) => (owner === PG_DATABASE_OWNER ? db.owner : owner);
  const owned = new Map<string, OwnedObject[]>();
  const superuserOwned: OwnedObject[] = [];
  for (const o of facts.objects) {
    const owner = resolve(o.owner);
    if (owner === login.name) continue;
    if (role(owner).superuser) superuserOwned.push({ ...o, owner });
    else owned.set(owner, [...(owned.get(owner) ?? []), o]);
  }
  for (const loader of facts.publishTableOwners) if (loader !== login.name && !owned.has(loader)) owned.set(loader, []);

  for (const [name, objects] of owned) {
    const r = role(name);
    const loader = facts.publishTableOwners.includes(name);
    const what = [
      objects.length ? `owner of ${ownedText(objects)}` : "",
      loader ? "a loader of the publish schema (hubExport:database.publishTableOwners)" : "",
    ]
      .filter(Boolean)
      .join("; ");
    if (r.superuser) {
      out.push({
        check: `${name} (${what}) is a superuser: default privileges for its tables need a role of its own`,
        holds: false,
        sql: [
          `-- name a loader role that is not a superuser in hubExport:database.publishTableOwners instead of ${name}`,
        ],
      });
      continue;
    }
    // The provider's own check (a direct SET membership) keeps it from granting itself the role; the privileges
    // (INHERIT) are what the GRANTs and ALTER DEFAULT PRIVILEGES need. ADMIN OPTION lets the provider grant it itself.
    const holds = su || (r.exists && ((r.directSet && r.privileges) || r.adminOption));
    out.push({
      check: `a member of ${name} WITH INHERIT TRUE, SET TRUE: ${what}`,
      holds,
      sql: [...createdRoles([name]), membershipSql(name, login.name, serverVersion)],
    });
  }

  // A superuser's objects: its membership would make the login a superuser, so the DBA grants or hands them over.
  for (const o of superuserOwned) {
    const inPublish = o.schema === facts.publishSchema;
    const sql = !inPublish
      ? `ALTER ${ALTER_KIND[o.kind]} ${qualified(o)} OWNER TO ${me};`
      : o.kind === "schema"
        ? `GRANT USAGE ON SCHEMA ${qualified(o)} TO ${me} WITH GRANT OPTION;`
        : `GRANT SELECT ON ${qualified(o)} TO ${me} WITH GRANT OPTION;`;
    out.push({
      check: inPublish
        ? `${objectText(o)}, owned by the superuser ${o.owner}: ${o.kind === "schema" ? "USAGE" : "SELECT"} on it WITH GRANT OPTION, to grant it to the task`
        : `${objectText(o)}, owned by the superuser ${o.owner}: owned by the login, which changes it`,
      holds: su,
      sql: [sql],
    });
  }

  // Update and delete of the task's role (a password change, `destroy`) need ADMIN OPTION on it: the login has it
  // when it created the role (PostgreSQL 16+), not when another did.
  const task = facts.taskRole ? role(facts.taskRole) : undefined;
  if (task?.exists && task.name !== login.name)
    out.push({
      check: `ADMIN OPTION on the task's role ${task.name}, which exists: changing its password and dropping it need it`,
      holds: su || task.adminOption,
      sql: [`GRANT ${sqlIdent(task.name)} TO ${me} WITH ADMIN OPTION;`],
    });
  return out;
}

/** The statements for what does not hold, each once, in order. */
export function missingStatements(prerequisites: Prerequisite[]): string[] {
  return [...new Set(prerequisites.filter((p) => !p.holds).flatMap((p) => p.sql))];
}

/** When the login cannot connect at all: the one statement that lets it, then the probe can read the rest. */
export function connectPrerequisite(database: string, login: string): Prerequisite {
  return {
    check: `log in to database ${database} (CONNECT): nothing else can be checked until it can`,
    holds: false,
    sql: [`GRANT CONNECT ON DATABASE ${sqlIdent(database)} TO ${sqlIdent(login)} WITH GRANT OPTION;`],
  };
}
