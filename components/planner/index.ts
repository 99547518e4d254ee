/**
 * The offline plan behind `hub-export plan`: runs the real program (components/program.ts) under the SDK's mocks and
 * records every resource it registers as the engine would receive it, secrets still tagged. No cloud, no Pulumi CLI.
 * Only the SDK's public API: `setMocks` gives each registration (in order, with its provider and mocked state) and a
 * stack transformation each resource's props and options, from which the request's inputs, dependencies and aliases
 * are derived as the SDK derives them (runtime/resource.js prepareResource). test/layers.test.ts holds every import of
 * @pulumi/pulumi to its public entry points.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { inspectStackFile, readStackFileConfig, stackFilePath, stackNameOf } from "../../config/load";
import { PROJECT_NAME } from "../../config/schema";
import { UserError } from "../../core/errors";
import { hubExportProgram } from "../program";
import { DEFAULT_MOCK_ACCOUNT, markSecret, mockCall, mockResource, type MockAccount } from "./mocks";

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

/** A resource as the stack transformation sees it, before the SDK registers it. */
interface Constructed {
  resource: pulumi.Resource;
  props: pulumi.Inputs;
  opts: pulumi.CustomResourceOptions & pulumi.ComponentResourceOptions;
  /** `protect` as the request carries it: the resource's own, else its parent's. */
  protect?: boolean;
}

/** A registration the mocks received, and the resource constructed for it (none for the stack). */
interface Registration {
  args: pulumi.runtime.MockResourceArgs;
  seen?: Constructed;
  /** The mocked outputs as the mock monitor serializes them. */
  state: Promise<object>;
}

/** An Input's value (never unknown: the mocks run as an update, not a preview). */
const resolved = <T>(input: pulumi.Input<T>) =>
  new Promise<pulumi.Unwrap<T>>((resolve) => pulumi.output(input).apply(resolve));

/** A value as the engine's google.protobuf.Struct hands it back: keys sorted, undefined fields gone. */
function asStruct(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asStruct);
  if (!value || typeof value !== "object") return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .filter((k) => object[k] !== undefined)
      .map((k) => [k, asStruct(object[k])]),
  );
}

/** The `dependsOn` option's resources (runtime/dependsOn.js gatherExplicitDependencies). */
async function explicitDependencies(dependsOn: unknown): Promise<pulumi.Resource[]> {
  if (!dependsOn) return [];
  if (Array.isArray(dependsOn)) return (await Promise.all(dependsOn.map(explicitDependencies))).flat();
  if (dependsOn instanceof Promise || pulumi.Output.isInstance(dependsOn))
    return explicitDependencies(await resolved(dependsOn as pulumi.Input<unknown>));
  return [dependsOn as pulumi.Resource];
}

/** An alias as the SDK sends it (runtime/resource.js mapAliasesForRequest): blank fields, the resource's parent. */
async function aliasSpec(
  input: pulumi.Input<string | pulumi.Alias>,
  parentUrn: string | undefined,
): Promise<AliasSpec> {
  const alias = await resolved(input);
  if (typeof alias === "string") return { urn: alias };
  const text = async (v: pulumi.Input<string> | undefined) => (v === undefined ? "" : (await resolved(v)) || "");
  const hasParent = Object.prototype.hasOwnProperty.call(alias, "parent");
  const parent = alias.parent;
  return {
    name: await text(alias.name),
    type: await text(alias.type),
    stack: await text(alias.stack),
    project: await text(alias.project),
    parentUrn: !hasParent
      ? (parentUrn ?? "")
      : parent === undefined
        ? ""
        : ((await resolved(pulumi.Resource.isInstance(parent) ? parent.urn : parent)) ?? ""),
    noParent: hasParent && parent === undefined,
  };
}

const append = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/** Each run's unhandled rejections go to it: Node emits `unhandledRejection` in the rejected promise's context. */
const runFailures = new AsyncLocalStorage<(err: unknown) => void>();
let listening = false;
function onUnhandledRejection(reason: unknown): void {
  const fail = runFailures.getStore();
  if (fail) fail(reason);
  else if (process.listenerCount("unhandledRejection") === 1) throw reason;
}

/** The SDK's runtime state is one per process (setMocks resets it): runs take turns. */
let previousRun: Promise<unknown> = Promise.resolve();

/** Runs `options.program` (default: the real program) under mocks and returns what it registered. */
export function runProgramUnderMocks(options: RunOptions): Promise<PlanRun> {
  const run = previousRun.then(() => {
    let fail!: (err: unknown) => void;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => undefined);
    if (!listening) process.on("unhandledRejection", onUnhandledRejection);
    listening = true;
    // `work`, or the run's first unhandled rejection if that comes first (later ones are the run's too).
    const unlessFailed = <T>(work: Promise<T>) => Promise.race([work, failed]);
    return runFailures.run(fail, () => runOnce(options, unlessFailed));
  });
  previousRun = run.catch(() => undefined);
  return run;
}

async function runOnce(options: RunOptions, unlessFailed: <T>(work: Promise<T>) => Promise<T>): Promise<PlanRun> {
  const project = PROJECT_NAME;
  const region = options.config["aws:region"];
  const account: MockAccount = { ...DEFAULT_MOCK_ACCOUNT, ...(region ? { region } : {}), ...options.account };
  const program = options.program ?? (() => hubExportProgram({ offline: true }));

  // The SDK captures a stack trace for every promise and resource; formatting them is most of a large plan's time.
  // Off while the program runs; HUB_EXPORT_PLAN_STACK_TRACES=1 keeps them to debug a failure.
  const stackTraceLimit = Error.stackTraceLimit;
  if (process.env.HUB_EXPORT_PLAN_STACK_TRACES !== "1") Error.stackTraceLimit = 0;
  let restore: (() => void) | undefined;
  try {
    const registered: Registration[] = [];
    const waiting = new Map<string, Constructed[]>();
    // A failed run's program may still construct resources after the next run began: they are not this run's.
    const run = runFailures.getStore();
    const ours = () => runFailures.getStore() === run;
    const seen = new Map<pulumi.Resource, Constructed>();
    const children = new Map<pulumi.Resource, pulumi.Resource[]>();
    const failures: Error[] = [];
    const guard = <T>(fn: () => T): T => {
      try {
        return fn();
      } catch (err) {
        failures.push(err as Error);
        throw err;
      }
    };
    restore = restoreRuntime();
    // setMocks resets the runtime's state (settings.js resetOptions): nothing of a previous run is left.
    await pulumi.runtime.setMocks(
      {
        newResource: (args) =>
          guard(() => {
            // Registrations come in their own order: a resource is matched by type and name, the first constructed.
            const mine = ours();
            const constructed = mine ? waiting.get(`${args.type}::${args.name}`)?.shift() : undefined;
            const result = mockResource(args, account);
            const state = markSecret(result.state, constructed?.opts.additionalSecretOutputs ?? []);
            if (mine)
              registered.push({ args, seen: constructed, state: pulumi.runtime.serializeProperties("state", state) });
            return { id: result.id, state };
          }),
        call: (args) => guard(() => mockCall(args, account)),
      },
      project,
      options.stack,
      false,
    );
    pulumi.runtime.setAllConfig(options.config, options.secretKeys);

    // The program's own error (a RunError for bad config) is rethrown after the run: thrown inside the stack, it would
    // also reject the stack's internal promises, which nothing here awaits.
    let programFailed: { error: unknown } | undefined;
    let returned: unknown = {};
    await unlessFailed(
      pulumi.runtime.runInPulumiStack(async () => {
        const stack = pulumi.runtime.getStackResource()!;
        pulumi.runtime.registerStackTransformation(({ resource, type, name, props, opts }) => {
          if (!ours()) return undefined;
          const parent = opts.parent ?? stack;
          const own = opts.protect ?? seen.get(parent)?.protect;
          const constructed: Constructed = { resource, props, opts, ...(own === undefined ? {} : { protect: own }) };
          seen.set(resource, constructed);
          append(children, parent, resource);
          // A resource got by URN is looked up, not registered.
          if (!opts.urn) append(waiting, `${type}::${name}`, constructed);
          return undefined;
        });
        try {
          return (returned = await program());
        } catch (err) {
          programFailed = { error: err };
          return {};
        }
      }),
    );
    // Waits for the SDK's RPCs to drain; the mock monitor has nothing to close.
    await unlessFailed(pulumi.runtime.disconnect());
    if (programFailed) throw programFailed.error;
    if (failures.length > 0)
      throw new Error(`the program failed under mocks: ${failures.map((f) => f.message).join("; ")}`);
    const stack = pulumi.runtime.getStackResource()!;
    const resources = await unlessFailed(Promise.all(registered.map((r) => planned(r, stack, children))));
    const outputs = await pulumi.runtime.serializeProperties("outputs", { outputs: asStackOutput(returned) });
    return {
      project,
      stack: options.stack,
      account,
      resources,
      outputs: asStruct(outputs.outputs ?? {}) as Record<string, unknown>,
    };
  } finally {
    restore?.();
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** The program's result as the stack registers it (runtime/stack.js massage): a resource as its outputs. */
function asStackOutput(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asStackOutput);
  if (!value || typeof value !== "object" || pulumi.Output.isInstance(value)) return value;
  const resource = pulumi.Resource.isInstance(value);
  // Assets and other class instances are serialized as they are.
  if (!resource && Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => !resource || !k.startsWith("__"))
      .map(([k, v]) => [k, asStackOutput(v)]),
  );
}

/**
 * Puts back the process's runtime options and config (the SDK keeps one set per process, which setMocks replaces):
 * code outside a run (pulumi.getStack(), allConfig()) sees none of the run's. No public API tells the config's secret
 * keys: outside a run there are none (neither the CLI nor the tests set config).
 */
function restoreRuntime(): () => void {
  const project = pulumi.getProject();
  const stack = pulumi.getStack();
  const preview = pulumi.runtime.isDryRun();
  const config = pulumi.runtime.allConfig();
  return () => {
    pulumi.runtime.resetOptions(project, stack, -1, "", "", preview, "");
    pulumi.runtime.setAllConfig(config);
  };
}

/** The custom resources `direct` stands for: a component for the custom ones under it (runtime/dependsOn.js). */
function customResources(
  direct: pulumi.Resource[],
  self: pulumi.Resource,
  children: Map<pulumi.Resource, pulumi.Resource[]>,
): pulumi.Resource[] {
  const reached = new Set<pulumi.Resource>();
  const visit = (r: pulumi.Resource) => {
    if (reached.has(r)) return;
    reached.add(r);
    if (!pulumi.CustomResource.isInstance(r) && r !== self) for (const child of children.get(r) ?? []) visit(child);
  };
  direct.forEach(visit);
  return [...reached].filter((r) => pulumi.CustomResource.isInstance(r) && r !== self);
}

/** A registration as the engine would receive it (runtime/resource.js prepareResource and registerResource). */
async function planned(
  { args, seen, state }: Registration,
  stack: pulumi.Resource,
  children: Map<pulumi.Resource, pulumi.Resource[]>,
): Promise<PlannedResource> {
  if (!seen && args.type !== "pulumi:pulumi:Stack")
    throw new Error(`${args.type} ${args.name} was registered before the plan's stack transformation`);
  const resource = seen?.resource ?? stack;
  const opts = seen?.opts ?? {};
  const read = !!opts.id;
  const parent = seen && (await resolved((opts.parent ?? stack).urn));
  const [inputs, propertyDependencies] = await pulumi.runtime.serializeResourceProperties(
    `resource:${args.name}[${args.type}]`,
    seen?.props ?? (args.inputs as pulumi.Inputs),
  );
  const direct = [
    ...(await explicitDependencies(opts.dependsOn)),
    ...[...propertyDependencies.values()].flatMap((set) => [...set]),
  ];
  const dependsOn = await Promise.all(customResources(direct, resource, children).map((r) => resolved(r.urn)));
  const entry: PlannedResource = {
    urn: await resolved(resource.urn),
    type: args.type,
    name: args.name,
    ...(parent ? { parent } : {}),
    custom: args.custom === true,
    read,
    ...(read ? { id: args.id } : {}),
    ...(args.provider ? { provider: args.provider } : {}),
    dependsOn: [...new Set(dependsOn)].sort(),
    options: {},
    inputs: asStruct(inputs) as Record<string, unknown>,
  };
  const o = entry.options;
  if (opts.additionalSecretOutputs?.length) o.additionalSecretOutputs = [...opts.additionalSecretOutputs];
  if (!read) {
    if (opts.retainOnDelete) o.retainOnDelete = true;
    if (opts.deleteBeforeReplace) o.deleteBeforeReplace = true;
    if (seen?.protect) o.protect = true;
    if (opts.ignoreChanges?.length) o.ignoreChanges = [...opts.ignoreChanges];
    if (opts.replaceOnChanges?.length) o.replaceOnChanges = [...opts.replaceOnChanges];
    if (args.custom && opts.import) o.import = opts.import;
    // Duplicate URNs are sent once; the SDK sends its resource's parent with each alias spec.
    const aliases = [...new Set(opts.aliases ?? [])];
    if (aliases.length) o.aliases = await Promise.all(aliases.map((a) => aliasSpec(a, parent)));
  }
  entry.state = asStruct(await state) as Record<string, unknown>;
  return entry;
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
