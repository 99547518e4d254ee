/** `hub-export run`: the export task (the container's command). The work is in task/run.ts. */
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";

export default defineCommand({
  summary: "Run the export task: the rendered pipeline, from the warehouse to the hub's regional queues",
  usage:
    "hub-export run --definition <path|s3://bucket/key> --scripts <dir|s3://bucket/prefix/> [--connections <dir|secretsmanager:PREFIX>]\n" +
    "    [--cls <path|s3://bucket/key of the CLS load sheet CSV> [--cls-mode report|strict]]\n" +
    "  (each option may come from the environment instead: HUB_EXPORT_DEFINITION, HUB_EXPORT_SCRIPTS, HUB_EXPORT_CONNECTIONS,\n" +
    "   HUB_EXPORT_CLS, HUB_EXPORT_CLS_MODE)\n" +
    "  --cls: compare the codes of every message with the CLS load sheet before publishing; report mode (default) reports\n" +
    "  unknown codes and goes on, strict mode holds back the affected employees' messages (status HELD_BACK)\n" +
    "  exit 0: ExecutionCompleted; 3: ExecutionFailed (failed messages are retried by the next run); 1: refused or stopped",
  options: {
    definition: { type: "string" },
    scripts: { type: "string" },
    connections: { type: "string" },
    cls: { type: "string" },
    "cls-mode": { type: "string" },
  },
  async run(values) {
    const definition = values.definition ?? process.env.HUB_EXPORT_DEFINITION;
    const scripts = values.scripts ?? process.env.HUB_EXPORT_SCRIPTS;
    const connections = values.connections ?? process.env.HUB_EXPORT_CONNECTIONS;
    if (!definition) throw new UsageError("--definition is required");
    if (!scripts) throw new UsageError("--scripts is required");
    if (!connections) throw new UsageError("--connections is required (a folder of connection files, or secretsmanager:PREFIX)");
    const cls = values.cls ?? process.env.HUB_EXPORT_CLS;
    const mode = values["cls-mode"] ?? process.env.HUB_EXPORT_CLS_MODE ?? "report";
    if (mode !== "report" && mode !== "strict") throw new UsageError(`--cls-mode must be report or strict, got '${mode}'`);
    if (values["cls-mode"] !== undefined && !cls) throw new UsageError("--cls-mode needs --cls (the CLS load sheet to check against)");
    // Loaded here so that `hub-export --help` does not pay for the task's modules.
    const { runExport } = require("../../task/run") as typeof import("../../task/run");
    return runExport({ definition, scripts, connections }, cls ? { cls: { sheet: cls, mode } } : {});
  },
});
