/**
 * The offline plan behind `hub-export plan`: runs the real program (components/program.ts) under the SDK's mocks and
 * records every resource it registers as the engine would receive it, secrets still tagged. No cloud, no Pulumi CLI.
 * Each run executes inside the SDK's own `withLocalStorage` (as the automation API runs inline programs), so runs in
 * one process do not share runtime state; the internal modules used are pinned with @pulumi/pulumi 3.248.0, and
 * test/components/secrets.test.ts runs two plans in one process to catch a change.
 */
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import type { Alias } from "@pulumi/pulumi/proto/alias_pb";
import type {
  ReadResourceRequest,
  ReadResourceResponse,
  RegisterResourceOutputsRequest,
  RegisterResourceRequest,
  RegisterResourceResponse,
} from "@pulumi/pulumi/proto/resource_pb";
import { inspectStackFile, readStackFileConfig, stackFilePath, stackNameOf } from "../../config/load";
import { PROJECT_NAME } from "../../config/schema";
import { UserError } from "../../core/errors";
import { hubExportProgram } from "../program";
import { DEFAULT_MOCK_ACCOUNT, markSecret, mockCall, mockResource, type MockAccount } from "./mocks";

interface RuntimeState {
  withLocalStorage<T>(callback: () => Promise<T>): Promise<T>;
  /** The store of the current async context: a run's own inside withLocalStorage. */
  getLocalStore(): object | undefined;
}
interface RuntimeSettings {
  waitForRPCs(): Promise<void>;
  getMonitor(): unknown;
}
const runtimeState = require("@pulumi/pulumi/runtime/state") as RuntimeState;
const runtimeSettings = require("@pulumi/pulumi/runtime/settings") as RuntimeSettings;

export interface PlannedResource {
  urn: string;
  type: string;
  name: string;
  /** URN of the parent; absent for the stack itself. */
  parent?: string;
  custom: boolean;
  /** A read of an existing resource (`Resource.get`): never created, updated or deleted. */
  read: boolean;
  /** The id of a read. */
  id?: string;
  /** `<provider urn>::<id>` of an explicit provider. */
  provider?: string;
  dependsOn: string[];
  options: {
    additionalSecretOutputs?: string[];
    retainOnDelete?: boolean;
    deleteBeforeReplace?: boolean;
    protect?: boolean;
    ignoreChanges?: string[];
    replaceOnChanges?: string[];
    /** The `import` option: the id of an existing resource to adopt. */
    import?: string;
    /** The `aliases` option, as the SDK sends it (a URN, or a spec whose blank fields default to the resource's). */
    aliases?: AliasSpec[];
  };
  /** As the engine receives them: secrets tagged (see values.ts: maskValue, revealValue, isSecretValue). */
  inputs: Record<string, unknown>;
  /** The mocked outputs, secrets tagged; kept for tests, not printed. */
  state?: Record<string, unknown>;
}

/** One alias as the engine receives it: a URN, or a spec (name, type, stack, project, parent: "" for the default). */
export type AliasSpec =
  | { urn: string }
  | { name: string; type: string; stack: string; project: string; parentUrn: string; noParent: boolean };

export interface PlanRun {
  project: string;
  stack: string;
  account: MockAccount;
  /** In registration order. */
  resources: PlannedResource[];
  /** The stack outputs, secrets tagged. */
  outputs: Record<string, unknown>;
}

export interface RunOptions {
  stack: string;
  /** Engine-form config: `namespace:key` → string, objects as JSON (what `pulumi up` hands the program). */
  config: Record<string, string>;
  secretKeys?: string[];
  /** Default: the real program. */
  program?: () => unknown;
  account?: Partial<MockAccount>;
}

// The monitor's requests and responses: the SDK's generated protobuf messages.
type Callback = (err: unknown, response: RegisterResourceResponse | ReadResourceResponse | undefined) => void;
interface Monitor {
  registerResource(req: RegisterResourceRequest, callback: Callback): Promise<void>;
  readResource(req: ReadResourceRequest, callback: Callback): Promise<void>;
  registerResourceOutputs(req: RegisterResourceOutputsRequest, callback: Callback): void;
}

/** An Alias message of the register request (proto/alias_pb.js). */
function aliasSpec(alias: Alias): AliasSpec {
  const spec = alias.getSpec();
  if (!spec) return { urn: alias.getUrn() };
  return {
    name: spec.getName(),
    type: spec.getType(),
    stack: spec.getStack(),
    project: spec.getProject(),
    parentUrn: spec.getParenturn(),
    noParent: spec.getNoparent(),
  };
}

/** Each run's store → its failure: the run takes the unhandled rejections of its own context (later ones too). */
const runFailures = new WeakMap<object, (err: unknown) => void>();
let listening = false;

/**
 * Node emits `unhandledRejection` in the async context of the rejected promise: the rejection goes to the run whose
 * store that context holds. Any other is thrown, as Node does when nothing listens.
 */
function onUnhandledRejection(reason: unknown): void {
  const store = runtimeState.getLocalStore();
  const fail = store && runFailures.get(store);
  if (fail) fail(reason);
  else if (process.listenerCount("unhandledRejection") === 1) throw reason;
}

/** `work`, or the current run's first unhandled rejection if that comes first. */
function runFailure(): <T>(work: Promise<T>) => Promise<T> {
  let fail!: (err: unknown) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  runFailures.set(runtimeState.getLocalStore()!, fail);
  if (!listening) process.on("unhandledRejection", onUnhandledRejection);
  listening = true;
  return (work) => Promise.race([work, failed]);
}

/** Runs `options.program` (default: the real program) under mocks and returns what it registered. */
export async function runProgramUnderMocks(options: RunOptions): Promise<PlanRun> {
  const project = PROJECT_NAME;
  const region = options.config["aws:region"];
  const account: MockAccount = { ...DEFAULT_MOCK_ACCOUNT, ...(region ? { region } : {}), ...options.account };
  const program = options.program ?? (() => hubExportProgram({ offline: true }));

  // The SDK captures a stack trace for every promise and resource; formatting them is most of a large plan's time.
  // Off while the program runs; HUB_EXPORT_PLAN_STACK_TRACES=1 keeps them to debug a failure.
  const stackTraceLimit = Error.stackTraceLimit;
  if (process.env.HUB_EXPORT_PLAN_STACK_TRACES !== "1") Error.stackTraceLimit = 0;
  try {
    return await runtimeState.withLocalStorage(async () => {
      const resources: PlannedResource[] = [];
      const outputs = new Map<string, Record<string, unknown>>();
      const failures: Error[] = [];
      // Set synchronously by the patched registerResource right before the mock monitor calls newResource.
      let pending: { type: string; name: string; additionalSecretOutputs: string[] } | undefined;

      const guard = <T>(fn: () => T): T => {
        try {
          return fn();
        } catch (err) {
          failures.push(err as Error);
          throw err;
        }
      };
      await pulumi.runtime.setMocks(
        {
          newResource: (args) =>
            guard(() => {
              const aso =
                pending && pending.type === args.type && pending.name === args.name
                  ? pending.additionalSecretOutputs
                  : [];
              pending = undefined;
              const result = mockResource(args, account);
              return { id: result.id, state: markSecret(result.state, aso) };
            }),
          call: (args) => guard(() => mockCall(args, account)),
        },
        project,
        options.stack,
        false,
      );
      pulumi.runtime.setAllConfig(options.config, options.secretKeys);

      const monitor = runtimeSettings.getMonitor() as Monitor;
      const record = (
        call: { read: false; req: RegisterResourceRequest } | { read: true; req: ReadResourceRequest },
      ): PlannedResource => {
        const { req, read } = call;
        const entry: PlannedResource = {
          urn: "",
          type: req.getType(),
          name: req.getName(),
          ...(req.getParent() ? { parent: req.getParent() } : {}),
          custom: call.read ? true : call.req.getCustom(),
          read,
          ...(call.read ? { id: call.req.getId() } : {}),
          ...(req.getProvider() ? { provider: req.getProvider() } : {}),
          dependsOn: [...req.getDependenciesList()].sort(),
          options: {},
          inputs: (call.read ? call.req.getProperties() : call.req.getObject())?.toJavaScript() ?? {},
        };
        const aso: string[] = req.getAdditionalsecretoutputsList();
        if (aso.length) entry.options.additionalSecretOutputs = [...aso];
        if (!call.read) {
          const r = call.req;
          if (r.getRetainondelete()) entry.options.retainOnDelete = true;
          if (r.getDeletebeforereplace()) entry.options.deleteBeforeReplace = true;
          if (r.getProtect()) entry.options.protect = true;
          if (r.getIgnorechangesList().length) entry.options.ignoreChanges = [...r.getIgnorechangesList()];
          if (r.getReplaceonchangesList().length) entry.options.replaceOnChanges = [...r.getReplaceonchangesList()];
          if (r.getImportid()) entry.options.import = r.getImportid();
          const aliases = r.getAliasesList().map(aliasSpec);
          if (aliases.length) entry.options.aliases = aliases;
        }
        resources.push(entry);
        pending = { type: entry.type, name: entry.name, additionalSecretOutputs: aso };
        return entry;
      };
      const withUrn =
        (entry: PlannedResource, callback: Callback): Callback =>
        (err, response) => {
          if (!err && response) {
            entry.urn = response.getUrn();
            entry.state = ("getObject" in response ? response.getObject() : response.getProperties())?.toJavaScript();
          }
          callback(err, response);
        };
      const register = monitor.registerResource.bind(monitor);
      const readResource = monitor.readResource.bind(monitor);
      const registerOutputs = monitor.registerResourceOutputs.bind(monitor);
      monitor.registerResource = (req, callback) => register(req, withUrn(record({ read: false, req }), callback));
      monitor.readResource = (req, callback) => readResource(req, withUrn(record({ read: true, req }), callback));
      monitor.registerResourceOutputs = (req, callback) => {
        outputs.set(req.getUrn(), req.getOutputs()?.toJavaScript() ?? {});
        registerOutputs(req, callback);
      };

      // The program's own error (a RunError for bad config) is rethrown after the run: thrown inside the stack, it would
      // also reject the stack's internal promises, which nothing here awaits.
      let programFailed: { error: unknown } | undefined;
      const unlessFailed = runFailure();
      await unlessFailed(
        pulumi.runtime.runInPulumiStack(async () => {
          try {
            return await program();
          } catch (err) {
            programFailed = { error: err };
            return {};
          }
        }),
      );
      await unlessFailed(runtimeSettings.waitForRPCs());
      if (programFailed) throw programFailed.error;
      if (failures.length > 0)
        throw new Error(`the program failed under mocks: ${failures.map((f) => f.message).join("; ")}`);
      const stack = resources.find((r) => r.type === "pulumi:pulumi:Stack");
      return { project, stack: options.stack, account, resources, outputs: (stack && outputs.get(stack.urn)) ?? {} };
    });
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

export interface EngineConfig {
  config: Record<string, string>;
  secretKeys: string[];
  /** The stand-ins put where the stack file has ciphertext, in order. */
  placeholders: string[];
}

/**
 * A stack file's `config:` block as `pulumi up` hands it to the program: every value a string (objects as JSON),
 * secrets decrypted. Without the CLI, each `secure:` value becomes a placeholder named after its ciphertext.
 */
export function engineConfigFromStackFile(file: string): EngineConfig {
  return engineConfigOf(readStackFileConfig(file));
}

/** engineConfigFromStackFile of a `config:` block already read. */
function engineConfigOf(allConfig: Record<string, unknown>): EngineConfig {
  const placeholders: string[] = [];
  const secretKeys: string[] = [];
  const replace = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(replace);
    if (value && typeof value === "object") {
      const entries = Object.entries(value);
      if (entries.length === 1 && entries[0][0] === "secure") {
        // Named after its ciphertext: two plans of a file tell a secret set anew from one kept (plan's diff).
        const placeholder = `PLACEHOLDER-SECRET-${createHash("sha256").update(String(entries[0][1])).digest("hex").slice(0, 16)}`;
        placeholders.push(placeholder);
        return placeholder;
      }
      return Object.fromEntries(entries.map(([k, v]) => [k, replace(v)]));
    }
    return value;
  };
  const config: Record<string, string> = {};
  for (const [key, value] of Object.entries(allConfig)) {
    const before = placeholders.length;
    const replaced = replace(value);
    if (placeholders.length > before) secretKeys.push(key);
    config[key] = typeof replaced === "string" ? replaced : JSON.stringify(replaced);
  }
  return { config, secretKeys, placeholders };
}

/**
 * Validates a stack file like `hub-export validate` (`--stack NAME`: `stack` alone, `--file PATH`: `file`), then plans
 * it with placeholder secrets; `account` stands in for the mocks' account (the deployer policy plans in the stack's
 * own). The file is read once; the program validates the config the engine hands it, as under `pulumi up`.
 */
export async function planStackFile(options: { stack?: string; file?: string; account?: Partial<MockAccount> }) {
  const file = options.file ?? stackFilePath(options.stack ?? "qa");
  const { allConfig } = inspectStackFile(options);
  const stack = options.stack ?? stackNameOf(file) ?? "offline";
  const engine = engineConfigOf(allConfig);
  const run = await runProgramUnderMocks({
    stack,
    config: engine.config,
    secretKeys: engine.secretKeys,
    account: options.account,
  }).catch((err: unknown) => {
    // The program's RunError is the user's problem (a file the config names, the CLS exports): exit 1, never 70.
    throw pulumi.RunError.isInstance(err) ? new UserError(err.message) : err;
  });
  return { ...run, file, placeholders: engine.placeholders };
}
