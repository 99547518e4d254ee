/** Step 1 of a run: the rendered pipeline definition, validated with the one definition schema. */
import { pipelineDefinitionSchema, taskOf, type PipelineDefinition } from "../../core/definition";
import { UserError } from "../../core/errors";
import { databaseOf, schemaOnly } from "../../core/naming";
import { sqlIdentifier } from "../model/schema";
import { readLocation } from "./location";

export async function loadDefinition(location: string): Promise<PipelineDefinition> {
  const text = await readLocation(location);
  if (text === undefined) throw new UserError(`pipeline definition ${location}: not found`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UserError(`pipeline definition ${location}: not valid JSON: ${(err as Error).message}`);
  }
  const parsed = pipelineDefinitionSchema.safeParse(doc);
  if (!parsed.success) {
    throw new UserError([
      `pipeline definition ${location}: invalid (${parsed.error.issues.length} problem${parsed.error.issues.length === 1 ? "" : "s"})`,
      ...parsed.error.issues.map((i) => `  ${["$", ...i.path.map(String)].join(".")}: ${i.message}`),
    ]);
  }
  checkNames(parsed.data, location);
  return parsed.data;
}

/** Schema names go into SQL unquoted: they must be plain identifiers, and name one database. */
function checkNames(def: PipelineDefinition, location: string): void {
  const p = def.parameters;
  const problems: string[] = [];
  const check = (what: string, value: string) => {
    try {
      sqlIdentifier(value, what);
    } catch (err) {
      problems.push((err as Error).message);
    }
  };
  for (const key of ["publish_schema", "staging_schema"] as const) {
    if (!p[key].includes("."))
      problems.push(`parameters.${key} '${p[key]}' must have the form <DatabaseName>.<schema>`);
    else check(`parameters.${key} schema`, schemaOnly(p[key]));
  }
  check("parameters.staging_schema_only", p.staging_schema_only);
  if (p.staging_schema.includes(".") && schemaOnly(p.staging_schema) !== p.staging_schema_only) {
    problems.push(
      `parameters.staging_schema_only '${p.staging_schema_only}' is not the schema of staging_schema '${p.staging_schema}'`,
    );
  }
  if (
    p.publish_schema.includes(".") &&
    p.staging_schema.includes(".") &&
    databaseOf(p.publish_schema).toLowerCase() !== databaseOf(p.staging_schema).toLowerCase()
  ) {
    problems.push(
      `parameters.publish_schema and staging_schema name different databases ('${databaseOf(p.publish_schema)}', '${databaseOf(p.staging_schema)}')`,
    );
  }
  if (taskOf(def, "ExtractEmployees").source !== p.publish_schema) {
    problems.push(
      `task "${taskOf(def, "ExtractEmployees").name}": source '${taskOf(def, "ExtractEmployees").source}' is not publish_schema '${p.publish_schema}'`,
    );
  }
  if (problems.length > 0)
    throw new UserError([`pipeline definition ${location}: invalid`, ...problems.map((l) => `  ${l}`)]);
}
