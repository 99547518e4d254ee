/** The tables a run reads and writes, named by the pipeline definition (already checked as `<schema>.<table>`). */
import { taskOf, type PipelineDefinition } from "../../core/definition";
import { TABLES, clientTables, schemaOnly } from "../../core/naming";

export interface RunTables {
  publishSchema: string;
  apiConfig: string;
  platConfig: string;
  messages: string;
  watermark: string;
  status: string;
  archive: string;
  intakeJob: string;
  /** The run in progress, its extract parts and its per-tenant counts (not in the definition: the task's own bookkeeping). */
  run: string;
  runPart: string;
  runTenant: string;
  /** HUB_EXPORT_RUN_HISTORY: one row per run outcome or operator action. */
  runHistory: string;
  /** HUB_<CLIENT>_ROWS_HELD_BACK: warehouse rows held back instead of published (duplicate or blank ids, mapping errors). */
  rowsHeldBack: string;
  /** The function HUB_<CLIENT>_OLDEST_XACT(): the start of the oldest transaction open in the warehouse. */
  oldestXact: string;
}

export function runTables(def: PipelineDefinition): RunTables {
  const load = taskOf(def, "LoadConfiguration");
  const extract = taskOf(def, "ExtractEmployees");
  const finish = taskOf(def, "FinishJob");
  const staging = def.parameters.staging_schema_only;
  return {
    publishSchema: schemaOnly(def.parameters.publish_schema),
    apiConfig: load.apiConfigTable,
    platConfig: load.platConfigTable,
    messages: extract.messagesTable,
    watermark: extract.watermarkTable,
    status: taskOf(def, "PublishMessages").statusTable,
    archive: finish.archiveTable,
    intakeJob: finish.intakeJobTable,
    run: `${staging}.${TABLES.run}`,
    runPart: `${staging}.${TABLES.run}_PART`,
    runTenant: `${staging}.${TABLES.run}_TENANT`,
    runHistory: `${staging}.${TABLES.runHistory}`,
    rowsHeldBack: `${staging}.${clientTables(def.parameters.client_name).rowsHeldBack}`,
    oldestXact: `${staging}.${clientTables(def.parameters.client_name).oldestXact}`,
  };
}
