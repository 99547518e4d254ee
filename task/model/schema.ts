/** The publish schema's DDL (publish_schema.sql), rendered for a schema name. */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../../core/errors";

/** The tables the extract reads, in the publish schema. */
export const PUBLISH_TABLES = {
  employee: "employee",
  address: "employee_address",
  communication: "employee_communication",
  education: "employee_education",
  dependent: "employee_dependent",
  contact: "employee_contact",
} as const;

const PLACEHOLDER = /<PUBLISH_SCHEMA>/g;
const INDEX_MARKER = "-- @indexes";
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A schema or table name that is interpolated into SQL: only plain identifiers are accepted. */
export function sqlIdentifier(name: string, what = "identifier"): string {
  if (!IDENTIFIER.test(name))
    throw new UserError(`${what} '${name}' is not a plain SQL identifier (a letter or _, then letters, digits or _)`);
  return name;
}

const CREATE_SCHEMA = /^CREATE SCHEMA IF NOT EXISTS [^;]+;\n?/m;

/**
 * The DDL in three: the schema (a role that only loads tables may not create it), the tables, and the indexes, so that a
 * bulk loader can create them after loading.
 */
export function publishSchemaSql(schema: string): { schema: string; tables: string; indexes: string } {
  const text = fs
    .readFileSync(path.join(__dirname, "publish_schema.sql"), "utf8")
    .replace(PLACEHOLDER, sqlIdentifier(schema, "publish schema"));
  const at = text.indexOf(INDEX_MARKER);
  const head = text.slice(0, at);
  const createSchema = CREATE_SCHEMA.exec(head);
  if (!createSchema) throw new Error("task/model/publish_schema.sql: no CREATE SCHEMA IF NOT EXISTS statement");
  return { schema: createSchema[0], tables: head.replace(CREATE_SCHEMA, ""), indexes: text.slice(at) };
}
