/** `hub-export run`: the export task (the container's command). The work is in task/run.ts. */
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";
import {
  BUCKET_FOLDERS,
  HUB_CONFIGURATION_FILES,
  hubConfigurationFolder,
  renderedPipelineKey,
} from "../../core/naming";
import { cut } from "../../core/redact";

// The qa stack's bucket and job (test/cli/help.test.ts keeps them equal); the keys are the ones `pulumi up` writes.
const EXAMPLE_BUCKET = "s3://acme-platform-qa/";
const EXAMPLE_JOB = "HRSYS_EMPL_HUB_ACME_202611_QA";

export default defineCommand({
  summary: "Run the export task: the rendered pipeline, from the warehouse to the hub's regional queues",
  options: {
    definition: {
      type: "string",
      value: "PATH|s3://BUCKET/KEY",
      required: true,
      description: "The rendered pipeline definition (env HUB_EXPORT_DEFINITION)",
      example: `--definition ${EXAMPLE_BUCKET}${renderedPipelineKey(EXAMPLE_JOB)}`,
    },
    scripts: {
      type: "string",
      value: "DIR|s3://BUCKET/PREFIX/",
      required: true,
      description: "The scripts folder holding credentials.ini and tenant_credentials.txt (env HUB_EXPORT_SCRIPTS)",
      example: `--scripts ${EXAMPLE_BUCKET}${BUCKET_FOLDERS.scripts}`,
    },
    connections: {
      type: "string",
      value: "DIR|secretsmanager:PREFIX",
      required: true,
      description:
        "The connection-strings entity collection: a folder of JSON records, or a Secrets Manager prefix (env HUB_EXPORT_CONNECTIONS)",
      example: "--connections secretsmanager:acme/qa",
    },
    cls: {
      type: "string",
      value: "PATH|s3://BUCKET/KEY",
      description:
        "The CLS load sheet (CSV): the codes of every message are compared with it before publishing (env HUB_EXPORT_CLS)",
      defaultText: "no check",
      example: `--cls ${EXAMPLE_BUCKET}${hubConfigurationFolder(EXAMPLE_JOB)}${HUB_CONFIGURATION_FILES.clsCsv}`,
    },
    "cls-mode": {
      type: "string",
      value: "MODE",
      description:
        "report (unknown codes are reported and the run goes on) or strict (the affected employees' messages are held back, status HELD_BACK) (env HUB_EXPORT_CLS_MODE)",
      defaultText: "report",
      example: "--cls-mode strict",
    },
    probe: {
      type: "boolean",
      description:
        "Do not run: load what a run loads (read-only) and check the hub the task would call, from the task's network (docs/hub-contract.md)",
      example: "--probe",
    },
    write: {
      type: "boolean",
      description:
        "With --probe: also publish one marked test message and send one marked ERS entity and intake report",
      example: "--write",
    },
    json: {
      type: "boolean",
      description: "With --probe: print the checks as one JSON object instead of a table",
      example: "--json",
    },
  },
  details: [
    "Each option may come from the environment instead (HUB_EXPORT_DEFINITION, HUB_EXPORT_SCRIPTS, HUB_EXPORT_CONNECTIONS, HUB_EXPORT_CLS, HUB_EXPORT_CLS_MODE): that is how the container is started.",
  ],
  exitCodes: {
    0: "the run ended ExecutionCompleted",
    1: "the run was refused (bad definition, scripts or connections) or stopped; the next run resumes it; with --probe: a required check failed",
    3: "the run ended ExecutionFailed: failed messages are retried by the next run under the same messageIds",
  },
  async run(values, io) {
    const definition = values.definition ?? process.env.HUB_EXPORT_DEFINITION;
    const scripts = values.scripts ?? process.env.HUB_EXPORT_SCRIPTS;
    const connections = values.connections ?? process.env.HUB_EXPORT_CONNECTIONS;
    if (!definition) throw new UsageError("--definition is required");
    if (!scripts) throw new UsageError("--scripts is required");
    if (!connections)
      throw new UsageError("--connections is required (a folder of connection files, or secretsmanager:PREFIX)");
    const cls = values.cls ?? process.env.HUB_EXPORT_CLS;
    const mode = values["cls-mode"] ?? process.env.HUB_EXPORT_CLS_MODE ?? "report";
    if (mode !== "report" && mode !== "strict")
      throw new UsageError(`--cls-mode must be report or strict, got '${cut(mode)}'`);
    if (values["cls-mode"] !== undefined && !cls)
      throw new UsageError("--cls-mode needs --cls (the CLS load sheet to check against)");
    if (!values.probe && (values.write || values.json)) throw new UsageError("--write and --json go with --probe");
    if (values.probe) {
      const { probeFromRunInputs, formatProbeTable } = await import("../../task/probe/index.js");
      const report = await probeFromRunInputs({ definition, scripts, connections }, { write: values.write ?? false });
      io.stdout.write(values.json ? JSON.stringify(report, null, 2) + "\n" : formatProbeTable(report));
      return report.passed ? 0 : 1;
    }
    // Loaded here so that `hub-export --help` does not pay for the task's modules.
    const { runExport } = await import("../../task/run.js");
    return runExport({ definition, scripts, connections }, cls ? { cls: { sheet: cls, mode } } : {});
  },
});
