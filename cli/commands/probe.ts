/** `hub-export probe`: checks a stack's hub endpoints before its first run (task/probe/). */
import { defineCommand } from "../command";
import { loadFromOptions, stackOptions, STACK_USAGE } from "../stackOptions";

export default defineCommand({
  summary: "Check the hub a stack's task calls: DNS, TLS, reachability, authentication and answer shapes",
  usage:
    `hub-export probe ${STACK_USAGE} [--scripts <dir|s3://bucket/prefix/>] [--connections <dir|secretsmanager:PREFIX>] [--write] [--json]\n` +
    "  secrets come from the stack's deployed scripts folder and connection store (run after 'pulumi up'), or the given ones\n" +
    "  --write: also publish one marked test message and send one marked ERS entity and intake report\n" +
    "  exit 0: every required check passed; 1: a required check failed; the container runs 'hub-export run --probe'",
  options: { ...stackOptions, scripts: { type: "string" }, connections: { type: "string" }, write: { type: "boolean" }, json: { type: "boolean" } },
  async run(values, io) {
    const config = loadFromOptions(values);
    const { deployedInputs, probeFromStack, formatProbeTable } = require("../../task/probe") as typeof import("../../task/probe");
    const deployed = deployedInputs(config);
    const report = await probeFromStack(config, { scripts: values.scripts ?? deployed.scripts, connections: values.connections ?? deployed.connections }, { write: values.write ?? false });
    io.stdout.write(values.json ? JSON.stringify(report, null, 2) + "\n" : formatProbeTable(report));
    return report.passed ? 0 : 1;
  },
});
