/**
 * The SQL of procedure step 5.1, rendered for a stack with the same tag values as the pipeline template: the common
 * schema (shared by every client of the platform environment) and a client's own run tables.
 */
import type { StackConfig } from "./stackConfig";
import { UserError } from "./errors";
import { TEMPLATE_TAGS, TAG_PATTERN, findTags } from "./tags";

export interface BaselineSource {
  name: string;
  text: string;
}

/** The tags whose values are the same for every client of a platform environment: the staging schema. */
const ENVIRONMENT_TAGS = new Set(["<STAGING_SCHEMA_VALUE>", "<STAGING_SCHEMA_ONLY_VALUE>"]);

export function renderBaseline(baseline: BaselineSource, config: StackConfig): string {
  const values = new Map(TEMPLATE_TAGS.map((t) => [t.tag, t.value(config)]));
  const sql = baseline.text.replace(TAG_PATTERN, (tag) => values.get(tag) ?? tag);
  const left = [...new Set(findTags(sql))];
  if (left.length > 0) throw new UserError(`${baseline.name}: tags without a value: ${left.join(", ")}`);
  return sql;
}

/**
 * The common-schema baseline: every client of an environment applies the same SQL, so it may hold only tags of the
 * environment. A client's tables belong in the client run tables file.
 */
export function renderCommonSchema(baseline: BaselineSource, config: StackConfig): string {
  const perClient = [...new Set(findTags(baseline.text))].filter((tag) => !ENVIRONMENT_TAGS.has(tag));
  if (perClient.length > 0) {
    throw new UserError(
      `${baseline.name}: the common schema must render the same for every client of an environment, but it uses ${perClient.join(", ")}: ` +
        `move what depends on them to the client run tables file (templates/sql/Hub_Client_Run_Tables_<BuildNumber>.sql)`,
    );
  }
  return renderBaseline(baseline, config);
}
