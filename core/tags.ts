/** The specification's tag table: each tag of the pipeline template, and where its value comes from. */
import type { StackConfig } from "./stackConfig";
import { HUB_REGIONS, type HubRegion } from "./regions";
import { schemaOnly } from "./naming";

export interface TagDefinition {
  tag: string;
  /** The pipeline parameter it fills, where the specification names one. */
  parameter?: string;
  /** For the queue-connection tags: the region whose publish step carries it. */
  region?: HubRegion;
  /** The value for a stack; undefined for a region without tenants (its step is dropped). */
  value(config: StackConfig): string | undefined;
}

export const REGION_TAGS: Record<HubRegion, string> = {
  US: "<HUB_MQ_CONNECTION_FOR_US_REGION>",
  EU: "<HUB_MQ_CONNECTION_FOR_EU_REGION>",
  APAC: "<HUB_MQ_CONNECTION_FOR_APAC_REGION>",
};

export const TEMPLATE_TAGS: readonly TagDefinition[] = [
  { tag: "<PUBLISH_SCHEMA_VALUE>", parameter: "publish_schema", value: (c) => c.publishSchema },
  { tag: "<STAGING_SCHEMA_VALUE>", parameter: "staging_schema", value: (c) => c.stagingSchema },
  { tag: "<STAGING_SCHEMA_ONLY_VALUE>", parameter: "staging_schema_only", value: (c) => schemaOnly(c.stagingSchema) },
  { tag: "<JOB_NAME_VALUE>", parameter: "job_name", value: (c) => c.jobName },
  { tag: "<CLIENT_NAME_VALUE>", parameter: "client_name", value: (c) => c.clientName },
  { tag: "<S3_CONNECTION_NAME>", value: (c) => c.bucket.connectionName },
  { tag: "<DATABASE_CONNECTION_NAME>", value: (c) => c.database.connectionName },
  ...HUB_REGIONS.map((region) => ({
    tag: REGION_TAGS[region],
    region,
    value: (c: StackConfig) => c.queues[region]?.connectionName,
  })),
];

/** What a tag looks like: `<UPPER_CASE>`. Anything of this shape that is not in the table is an unknown tag. */
export const TAG_PATTERN = /<[A-Za-z_][A-Za-z0-9_]*>/g;

export function findTags(text: string): string[] {
  return text.match(TAG_PATTERN) ?? [];
}
