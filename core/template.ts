/**
 * The pipeline template renderer (procedure steps 3 and 6): replace every occurrence of every tag, drop the publish
 * steps of regions without tenants, and check the result against the definition schema.
 */
import type { StackConfig } from "./stackConfig";
import { UserError } from "./errors";
import { TEMPLATE_TAGS, TAG_PATTERN, findTags } from "./tags";
import { pipelineDefinitionSchema, PUBLISH_TASK_NAME, type PipelineDefinition } from "./definition";
import { sortRegions } from "./regions";
import { hubEndpoints } from "./hubEndpoints";

export interface PipelineTemplate {
  fileName: string;
  buildNumber: string;
  text: string;
}

export interface RenderedTemplate {
  /** Uploaded as `templates/hub_hrsys_export/<fileName>`. */
  fileName: string;
  text: string;
  definition: PipelineDefinition;
}

/** Regions that have at least one hub tenant, in the specification's order. */
export function regionsInUse(config: Pick<StackConfig, "hubTenants">) {
  return sortRegions(config.hubTenants.map((t) => t.hubRegion));
}

export function renderTemplate(template: PipelineTemplate, config: StackConfig): RenderedTemplate {
  const fail = (lines: string[]): never => {
    throw new UserError([`template ${template.fileName}: cannot render`, ...lines.map((l) => `  ${l}`)]);
  };
  const known = new Set(TEMPLATE_TAGS.map((t) => t.tag));
  const unknown = [...new Set(findTags(template.text))].filter((t) => !known.has(t));
  if (unknown.length > 0) fail(unknown.map((t) => `unknown tag ${t}`));

  let doc: unknown;
  try {
    doc = JSON.parse(template.text);
  } catch (err) {
    return fail([`not valid JSON: ${(err as Error).message}`]);
  }

  // Step 6 of the procedure: delete the steps of the regions that do not apply.
  const inUse = new Set(regionsInUse(config));
  const publish = (doc as { tasks?: { name?: string; steps?: { region?: string }[] }[] }).tasks?.find(
    (t) => t?.name === PUBLISH_TASK_NAME,
  );
  if (!publish || !Array.isArray(publish.steps)) fail([`has no task "${PUBLISH_TASK_NAME}" with steps`]);
  publish!.steps = publish!.steps!.filter((s) => inUse.has(s.region as never));
  const stepRegions = new Set(publish!.steps.map((s) => s.region));
  const missing = [...inUse].filter((r) => !stepRegions.has(r));
  if (missing.length > 0)
    fail(missing.map((r) => `task "${PUBLISH_TASK_NAME}" has no step for region ${r}, which has tenants`));

  const values = new Map(TEMPLATE_TAGS.map((t) => [t.tag, t.value(config)]));
  const rendered = mapStrings(doc, (s) => s.replace(TAG_PATTERN, (tag) => values.get(tag) ?? tag));

  const leftovers: string[] = [];
  mapStrings(rendered, (s, path) => {
    for (const tag of findTags(s)) leftovers.push(`${path}: tag ${tag} left over (no value for it in this stack)`);
    return s;
  });
  if (leftovers.length > 0) fail(leftovers);

  // Environment-independent parameters come from the stack config (their defaults are the specification's).
  const definition = rendered as Record<string, unknown>;
  definition.parameters = { ...(definition.parameters as object), ...config.parameters };
  definition.hubContract = config.hubContract;
  definition.endpoints = hubEndpoints(config);
  definition.buildNumber = template.buildNumber;

  const checked = pipelineDefinitionSchema.safeParse(definition);
  if (!checked.success) {
    fail(checked.error.issues.map((i) => `${["$", ...i.path].join(".")}: ${i.message}`));
  }
  return { fileName: template.fileName, text: JSON.stringify(checked.data, null, 2) + "\n", definition: checked.data! };
}

/** A deep copy with every string (keys included) passed through `fn`. */
function mapStrings(value: unknown, fn: (s: string, path: string) => string, path = "$"): unknown {
  if (typeof value === "string") return fn(value, path);
  if (Array.isArray(value)) return value.map((v, i) => mapStrings(v, fn, `${path}[${i}]`));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [fn(k, `${path} (key)`), mapStrings(v, fn, `${path}.${k}`)]),
    );
  }
  return value;
}
