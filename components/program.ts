/**
 * The Pulumi program: validated stack config in, the HubExport component and the stack outputs out. index.ts exports
 * it for `pulumi up`; components/planner/index.ts runs the same function under mocks for `hub-export plan`.
 */
import * as pulumi from "@pulumi/pulumi";
import { configFromEngine } from "../config/load";
import type { StackConfig } from "../config/schema";
import { isUserError } from "../core/errors";
import { HubExport, type HubExportArgs } from "./hubExport";
import { PROJECT_NAME } from "./naming";
import { buildStackSheets } from "../cls/stack";

/** The stack config from the engine; a config or template problem becomes a RunError: its message, no stack trace. */
export function stackConfigFromEngine(): StackConfig {
  try {
    return configFromEngine(pulumi.runtime.allConfig(), pulumi.getStack());
  } catch (err) {
    if (isUserError(err)) throw new pulumi.RunError(err.message);
    throw err;
  }
}

export async function hubExportProgram(overrides: Omit<HubExportArgs, "config"> = {}): Promise<Record<string, unknown>> {
  const config = stackConfigFromEngine();
  let hub: HubExport;
  try {
    // The CLS load sheets are read from the exports folder before any resource is declared.
    const cls = overrides.cls ?? (config.cls ? await buildStackSheets(config.cls) : undefined);
    for (const problem of cls?.problems ?? []) void pulumi.log.warn(`CLS exports: ${problem}`);
    hub = new HubExport(PROJECT_NAME, { config, ...overrides, cls });
  } catch (err) {
    if (isUserError(err)) throw new pulumi.RunError(err.message);
    throw err;
  }
  const o = hub.outputs;
  return {
    bucket: o.bucket,
    templateKey: o.templateKey,
    definitionKey: o.definitionKey,
    jobName: o.jobName,
    intakeJobQuery: o.intakeJobQuery,
    scheduleName: o.scheduleName,
    connectionNames: o.connectionNames,
    connectionSecretNames: o.connectionSecretNames,
    routingRuleCounts: o.routingRuleCounts,
    hubChecklist: o.hubChecklist,
    clsLoadSheets: o.clsLoadSheets,
    cluster: o.cluster,
    taskDefinition: o.taskDefinition,
    logGroup: o.logGroup,
    image: o.image,
    alerts: o.alerts,
    runTask: o.runTask,
  };
}
