/** The probe's two entries: `run --probe` (what the task loads) and `probe --stack` (the stack config and its deployed stores). */
import type { StackConfig } from "../../core/stackConfig";
import { BUCKET_FOLDERS } from "../../core/naming";
import { createAgent } from "../http/client";
import { createLogger } from "../log";
import { loadRunConfiguration, type RunInputs } from "../load/configuration";
import { probeHub } from "./probe";
import { untimed } from "./checks";
import { probeReport, type ProbeReport } from "./report";
import { targetsFromRun, targetsFromStack } from "./targets";
import { closePools } from "../warehouse/database";

export { formatProbeTable, type ProbeReport } from "./report";

/** `run --probe`: loads exactly what a run loads (read-only), then probes the hub it would call. */
export async function probeFromRunInputs(inputs: RunInputs, options: { write: boolean }): Promise<ProbeReport> {
  // Warnings of the load go to stderr: stdout carries the table or the JSON.
  const config = await loadRunConfiguration(inputs, createLogger(2));
  const dispatcher = createAgent(4);
  try {
    const database = untimed(
      `database (${config.definition.connections.database})`,
      "load",
      `connected; tables present; ${config.tenants.length} tenant(s) in HUB_PLAT_CONFIG`,
      "ok",
      true,
    );
    return probeReport([database, ...(await probeHub(targetsFromRun(config), { write: options.write, dispatcher }))]);
  } finally {
    await Promise.allSettled([closePools(config.pool, config.ackPool), dispatcher.close()]);
  }
}

/** Where a stack's task reads its inputs: the bucket's scripts folder and the connection store (as components/task/exportTask.ts). */
export function deployedInputs(config: StackConfig): { scripts: string; connections: string } {
  return {
    scripts: `s3://${config.bucket.name}/${BUCKET_FOLDERS.scripts}`,
    connections: `secretsmanager:${config.connectionStore.prefix}`,
  };
}

/** `probe --stack`: the stack config's hub with the secrets of its deployed stores (or the given folders). */
export async function probeFromStack(
  config: StackConfig,
  inputs: { scripts: string; connections: string },
  options: { write: boolean },
): Promise<ProbeReport> {
  const { targets, problems } = await targetsFromStack(config, inputs);
  const dispatcher = createAgent(4);
  try {
    return probeReport([...problems, ...(await probeHub(targets, { write: options.write, dispatcher }))]);
  } finally {
    await dispatcher.close();
  }
}
