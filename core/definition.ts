/**
 * The pipeline definition: the rendered template, as the export task reads it. This module is its one schema; the
 * renderer checks its output against it and the task validates what it loads with it.
 */
import { z } from "zod";
import { HUB_REGIONS } from "./regions";
import { parametersSchema } from "./parameters";
import { FAILURE_MODES, HUB_CONTRACT_DEFAULTS, MESSAGE_PROPERTY_KEYS, TENANT_ID_PLACEHOLDER } from "./hubContract";

export const PUBLISH_TASK_NAME = "Publish Hub Messages to Queue";

/** The task types the executor knows, in the order a run performs them. */
export const TASK_TYPES = [
  "LoadConfiguration",
  "ExtractEmployees",
  "PublishMessages",
  "SendEntities",
  "FinishJob",
] as const;
export type TaskType = (typeof TASK_TYPES)[number];

const SCHEMA_QUALIFIED_TABLE = /^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$/;
const table = z.string().regex(SCHEMA_QUALIFIED_TABLE, "must be <schema>.<table>");

export const publishStepSchema = z.strictObject({
  name: z.string().min(1),
  region: z.enum(HUB_REGIONS),
  /** The message-queue connection's System Name: equals hub_destination of the region's tenants. */
  connection: z.string().min(1),
});

const taskSchema = z.discriminatedUnion("type", [
  z.strictObject({
    name: z.string().min(1),
    type: z.literal("LoadConfiguration"),
    apiConfigTable: table,
    platConfigTable: table,
  }),
  z.strictObject({
    name: z.string().min(1),
    type: z.literal("ExtractEmployees"),
    source: z.string().min(1),
    messagesTable: table,
    watermarkTable: table,
  }),
  z.strictObject({
    name: z.literal(PUBLISH_TASK_NAME),
    type: z.literal("PublishMessages"),
    statusTable: table,
    steps: z.array(publishStepSchema).min(1, "must keep at least one region step"),
  }),
  z.strictObject({
    name: z.string().min(1),
    type: z.literal("SendEntities"),
  }),
  z.strictObject({
    name: z.string().min(1),
    type: z.literal("FinishJob"),
    archiveTable: table,
    intakeJobTable: table,
  }),
]);
export type PipelineTask = z.infer<typeof taskSchema>;

export const failureMode = z.enum(FAILURE_MODES, { error: `must be one of ${FAILURE_MODES.join(", ")}` });
export const pathTemplate = z
  .string()
  .min(1, "must not be empty")
  .max(256, "must be at most 256 characters")
  .refine(
    (v) => !v.startsWith("/") && !/^[a-z][a-z0-9+.-]*:/i.test(v),
    "must be relative to the API URL (which ends in /api/): no leading / and no scheme",
  )
  .refine((v) => !/\s/.test(v), "must not contain spaces")
  .refine((v) => {
    // Resolved against the API's base URL it must stay under it: no dot segments, no // or \, nothing encoded.
    const route = v.split(/[?#]/)[0];
    return (
      !route.split("/").some((segment) => segment === "." || segment === "..") &&
      !route.includes("//") &&
      !route.includes("\\") &&
      !/%(2e|2f|5c)/i.test(route)
    );
  }, "must stay under its API's base URL: no . or .. segments, no // or \\, no encoded . / or \\")
  .refine(
    (v) => (v.match(/\{[^}]*\}/g) ?? []).every((p) => p === TENANT_ID_PLACEHOLDER),
    `may use only the placeholder ${TENANT_ID_PLACEHOLDER}`,
  );
export const propertyName = z
  .string()
  .regex(
    /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/,
    "must be a property name: a letter, then letters, digits, _ . - (at most 128)",
  );

/** The contract as resolved (every field present), as it travels in the rendered pipeline definition. */
export const resolvedHubContractSchema = z.strictObject({
  ers: z.strictObject({ enabled: z.boolean(), path: pathTemplate, onFailure: failureMode }),
  intakeReport: z.strictObject({ enabled: z.boolean(), path: pathTemplate, onFailure: failureMode }),
  queueMessage: z.strictObject({
    enabled: z.boolean(),
    names: z.strictObject(
      Object.fromEntries(MESSAGE_PROPERTY_KEYS.map((k) => [k, propertyName])) as Record<
        (typeof MESSAGE_PROPERTY_KEYS)[number],
        typeof propertyName
      >,
    ),
    onFailure: failureMode,
  }),
});

/** The 11 pipeline parameters, in the specification's order. */
export const definitionParametersSchema = z.strictObject({
  publish_schema: z.string().min(1),
  staging_schema: z.string().min(1),
  staging_schema_only: z.string().min(1),
  job_name: z.string().min(1),
  client_name: z.string().regex(/^[A-Z][A-Z0-9_]*$/, "must be uppercase"),
  ...parametersSchema.shape,
});

export const pipelineDefinitionSchema = z
  .strictObject({
    name: z.string().min(1),
    buildNumber: z.string().regex(/^\d+$/),
    description: z.string().optional(),
    dataDomainCode: z.literal("EMPL"),
    parameters: definitionParametersSchema,
    connections: z.strictObject({ storage: z.string().min(1), database: z.string().min(1) }),
    /** The assumed hub calls as the stack configures them (a definition without it gets today's defaults). */
    hubContract: resolvedHubContractSchema.default(HUB_CONTRACT_DEFAULTS),
    /** Where the task may send credentials and data: per hub region, the stack's hosts (core/hubEndpoints.ts). */
    endpoints: z.strictObject(
      {
        allowLoopback: z.boolean(),
        regions: z.partialRecord(z.enum(HUB_REGIONS), z.strictObject({ hosts: z.array(z.string().min(1)).min(1) })),
      },
      {
        error: (issue) =>
          issue.input === undefined
            ? "is required: the hub hosts the task may call (a definition rendered before they were carried: render it again, with pulumi up)"
            : undefined,
      },
    ),
    tasks: z.array(taskSchema),
  })
  .superRefine((def, ctx) => {
    const types = def.tasks.map((t) => t.type);
    if (types.join() !== TASK_TYPES.join()) {
      ctx.addIssue({
        code: "custom",
        path: ["tasks"],
        message: `must be the tasks ${TASK_TYPES.join(", ")}, in that order (got ${types.join(", ") || "none"})`,
      });
    }
    const publish = def.tasks.find((t) => t.type === "PublishMessages");
    if (publish) {
      for (const key of ["region", "connection"] as const) {
        const seen = new Set<string>();
        publish.steps.forEach((s, i) => {
          if (seen.has(s[key]))
            ctx.addIssue({
              code: "custom",
              path: ["tasks", types.indexOf("PublishMessages"), "steps", i, key],
              message: `duplicate ${key} '${s[key]}'`,
            });
          seen.add(s[key]);
        });
      }
    }
  });
export type PipelineDefinition = z.infer<typeof pipelineDefinitionSchema>;

/** The task of a given type (the schema guarantees each is present once). */
export function taskOf<T extends TaskType>(def: PipelineDefinition, type: T): Extract<PipelineTask, { type: T }> {
  return def.tasks.find((t) => t.type === type) as Extract<PipelineTask, { type: T }>;
}
