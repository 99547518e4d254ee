/**
 * `hub-export probe`: checks a stack's hub endpoints before its first run (task/probe/, docs/hub-contract.md); with
 * --warehouse, the warehouse admin login's prerequisites for `pulumi up` and `destroy` (cli/warehouseProbe.ts).
 */
import { defineCommand } from "../command";
import { UsageError } from "../../core/errors";
import { loadFromOptions, stackOptions, stackSelection } from "../stackOptions";
import { readStackFileConfig, stackFilePath } from "../../config/load";

export default defineCommand({
  summary: "Check the hub a stack's task calls: DNS, TLS, reachability, authentication and answer shapes",
  options: {
    ...stackOptions,
    scripts: {
      type: "string",
      value: "DIR|s3://BUCKET/PREFIX/",
      description: "Where tenant_credentials.txt is read",
      defaultText: "the stack's deployed scripts folder, s3://<bucket>/Tools/hub_python_scripts/",
      example: "--scripts .local/bucket/Tools/hub_python_scripts",
    },
    connections: {
      type: "string",
      value: "DIR|secretsmanager:PREFIX",
      description: "Where the queue connection records are read",
      defaultText: "the stack's connection store, secretsmanager:<connectionStore.prefix>",
      example: "--connections .local/connections",
    },
    write: {
      type: "boolean",
      description:
        "Also publish one marked test message per queue and send one marked ERS entity and intake report per tenant",
      example: "--write",
    },
    json: {
      type: "boolean",
      description: "Print the checks as one JSON object ({passed, counts, checks}) instead of a table",
      example: "--json",
    },
    warehouse: {
      type: "boolean",
      description:
        "Instead of the hub: check, read-only, what the warehouse's admin login needs for 'pulumi up' and 'pulumi destroy', and print the SQL its DBA runs for each missing prerequisite",
      example: "--warehouse",
    },
    "database-url": {
      type: "string",
      value: "URL",
      description:
        "With --warehouse: the admin login and where to reach it, postgres://ADMIN@HOST:PORT/DATABASE (no password: PGPASSWORD, or the prompt)",
      defaultText: "the stack's hubExport:database.admin at its provisioning endpoint, with its TLS settings",
      example: "--database-url postgres://platform_admin@localhost:15432/PLATDB",
    },
  },
  details: [
    "Without --write nothing is created: the broker gets an empty batch and ERS and HRSYS an empty body, which their contracts refuse (a 400 proves path and credentials). The cfg API is only read.",
    "Run it after 'pulumi up' (the secrets come from the deployed stores). The container runs the same checks with 'hub-export run --probe', from the task's network.",
    "A stack whose bucket has a given KMS key (hubExport:bucket.kmsKeyArn) also gets its key policy read (kms:GetKeyPolicy) and checked for the task's log group, the task role and the deployer.",
    "The deployed stores need AWS credentials of the stack's account (AWS_PROFILE, after 'aws sso login' for SSO). Without them it says how to give them and checks only DNS, TCP and TLS of each host the stack names (exit 1).",
    "--warehouse runs before the first 'pulumi up' (docs/pulumi.md): catalog queries only, as the admin login; the password comes from PGPASSWORD or a prompt without echo. Each missing prerequisite is listed with the SQL statement its DBA runs, one per line, ready to paste (exit 1); once they ran, the probe exits 0.",
  ],
  examples: [
    {
      command: "hub-export probe --stack qa",
      does: "a table of endpoint, check, result, latency and verdict for the qa stack's hub",
    },
    { command: "hub-export probe --stack prod --json", does: "the same as JSON, for a script" },
    {
      command:
        "hub-export probe --stack qa --warehouse --database-url postgres://platform_admin@localhost:15432/PLATDB",
      does: "the qa warehouse admin's prerequisites, through a tunnel on local port 15432, with the SQL for what is missing",
    },
  ],
  exitCodes: {
    0: "every required check passed",
    1: "a required check failed, or a warehouse prerequisite is missing (or the stack config is invalid)",
  },
  async run(values, io) {
    const config = loadFromOptions(values);
    if (values.warehouse) {
      const hubOnly = (["scripts", "connections", "write"] as const).filter((o) => values[o] !== undefined);
      if (hubOnly.length) throw new UsageError(`--warehouse checks the warehouse only: drop --${hubOnly.join(", --")}`);
      const { runWarehouseProbe } = await import("../warehouseProbe.js");
      return runWarehouseProbe(values, config, io);
    }
    if (values["database-url"] !== undefined) throw new UsageError("--database-url goes with --warehouse");
    // The deployed stores are in the stack file's aws:region, as `pulumi up`'s AWS provider reads it (the SDK would
    // otherwise want AWS_REGION, as in the container).
    const selection = stackSelection(values);
    const region = readStackFileConfig(selection.file ?? stackFilePath(selection.stack!))["aws:region"];
    if (typeof region === "string" && region.trim()) process.env.AWS_REGION = region.trim();
    const { deployedInputs, probeFromStack, formatProbeTable } = await import("../../task/probe/index.js");
    const deployed = deployedInputs(config);
    const hub = await probeFromStack(
      config,
      { scripts: values.scripts ?? deployed.scripts, connections: values.connections ?? deployed.connections },
      { write: values.write ?? false },
    );
    // A given KMS key (prod's): what its policy lacks for the task's log group, the task role and the deployer.
    const { probeReport } = await import("../../task/probe/report.js");
    const { adoptedKeyChecks } = await import("../adoptedKey.js");
    const report = probeReport([...hub.checks, ...(await adoptedKeyChecks(config))]);
    io.stdout.write(values.json ? JSON.stringify(report, null, 2) + "\n" : formatProbeTable(report));
    return report.passed ? 0 : 1;
  },
});
