/** The common-schema baseline, rendered for a stack with the same tag values as the pipeline template. */
import type { StackConfig } from "../config/schema";
import { UserError } from "./errors";
import { TEMPLATE_TAGS, TAG_PATTERN, findTags } from "./tags";

export interface BaselineSource {
  name: string;
  text: string;
}

export function renderBaseline(baseline: BaselineSource, config: StackConfig): string {
  const values = new Map(TEMPLATE_TAGS.map((t) => [t.tag, t.value(config)]));
  const sql = baseline.text.replace(TAG_PATTERN, (tag) => values.get(tag) ?? tag);
  const left = [...new Set(findTags(sql))];
  if (left.length > 0) throw new UserError(`${baseline.name}: tags without a value: ${left.join(", ")}`);
  return sql;
}
