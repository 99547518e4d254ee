/**
 * The Pulumi program: validated stack config in, the HubExport component and the stack outputs out. index.ts exports
 * it for `pulumi up`; components/planner/index.ts runs the same function under mocks for `hub-export plan`.
 */
import * as pulumi from "@pulumi/pulumi";
import { inspectEngineConfig, isJsonText, namespaceValues, PROJECT_ROOT } from "../config/load";
import { CONFIG_NAMESPACE, PROJECT_NAME, type StackConfig } from "../config/schema";
import { withOfflineSecrets } from "../config/placeholders";
import { preflight } from "../config/preflight";
import { loadStackInputs } from "../config/inputs";
import { isUserError } from "../core/errors";
import { HubExport, type HubExportArgs } from "./hubExport";
import { offlineObjectInspector } from "./storage/objectGuard";
import { formatIssue, misplacedKeys, routingRuleWarnings } from "../config/validate";
import { stackAwsProvider } from "./awsProvider";
import { withoutProviderCode } from "./dynamicResource";

export interface ProgramOptions extends Omit<HubExportArgs, "config"> {
  /**
   * The offline plan (`hub-export plan`, tests): secrets not set get stand-ins and placeholders stay, instead of
   * stopping the run. Never set under a real `pulumi preview` or `pulumi up`.
   */
  offline?: boolean;
  /**
   * Offline, what `pulumi up` would register where the offline plan has a stand-in for what only a deployment needs
   * (the dynamic providers' code, components/dynamicResource.ts; the CLS load sheets, config/clsSheets.ts): for the
   * tests that deploy a plan or compare two checkouts' plans.
   */
  deployable?: boolean;
}

/**
 * The `hubExport:` values through pulumi.Config, secret ones too with require, not requireSecret: they are validated
 * before anything is registered, and an Output cannot be. The schema wraps secrets in core Secret, and
 * components/hubExport.ts hands them on only as Pulumi secrets.
 */
function readNamespace(): Record<string, unknown> {
  const config = new pulumi.Config(CONFIG_NAMESPACE);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(namespaceValues(pulumi.runtime.allConfig()))) {
    const text = config.require(key);
    raw[key] = isJsonText(text) ? config.requireObject<unknown>(key) : text;
  }
  return raw;
}

/** The stack config from the engine; a config, preflight or template problem becomes a RunError: no stack trace. */
export function stackConfigFromEngine(options: { offline?: boolean } = {}): StackConfig {
  try {
    const stack = pulumi.getStack();
    const inspected = inspectEngineConfig(readNamespace(), stack, {
      checkEnvironment: !options.offline,
      misplacedKeys: misplacedKeys(pulumi.runtime.allConfig()),
    });
    if (options.offline) return withOfflineSecrets(inspected.config);
    preflight({ stack, inspected, allConfig: pulumi.runtime.allConfig(), root: PROJECT_ROOT });
    return inspected.config;
  } catch (err) {
    throw asRunError(err);
  }
}

/** A user's error becomes a RunError: the engine prints its message without a stack trace. */
function asRunError(err: unknown): unknown {
  return isUserError(err) ? new pulumi.RunError(err.message) : err;
}

export async function hubExportProgram(options: ProgramOptions = {}): Promise<Record<string, unknown>> {
  const { offline, deployable, ...overrides } = options;
  const standIns = offline && !deployable;
  const config = stackConfigFromEngine({ offline });
  let hub: HubExport;
  try {
    // The CLS load sheets (from the exports folder; offline, a stand-in) and the vendor scripts release (step 7.1,
    // checked for zip-slip), read before any resource is declared.
    const { cls, scriptsRelease } = await loadStackInputs(config, overrides, standIns);
    for (const problem of cls?.problems ?? []) void pulumi.log.warn(`CLS exports: ${problem}`);
    for (const issue of routingRuleWarnings(config)) void pulumi.log.warn(formatIssue(issue));
    // Offline, the mocks stand in for the bucket the guard looks at.
    const objectInspector = overrides.objectInspector ?? (offline ? offlineObjectInspector() : undefined);
    // Every AWS resource and read goes through the stack's provider: its `aws:` config, and the stack's tags.
    const aws = stackAwsProvider(config, pulumi.getStack());
    const declare = () =>
      new HubExport(
        PROJECT_NAME,
        { config, ...overrides, cls, scriptsRelease, objectInspector, writeImageContext: !offline },
        { providers: { aws } },
      );
    hub = standIns ? withoutProviderCode(declare) : declare();
  } catch (err) {
    throw asRunError(err);
  }
  return { ...hub.outputs };
}
