import { configDefaults, defineConfig } from "vitest/config";

/**
 * Files that change no global (environment, timers, process listeners, the working folder) and leave nothing running:
 * they share their workers' loaded modules (isolate: false), so @pulumi/pulumi, @pulumi/aws and the program load once
 * per worker instead of once per file. A file that changes a global belongs in the other project.
 */
const SHARED_MODULES = [
  "test/ci/workflows.test.ts",
  "test/components/accessLogs.test.ts",
  "test/components/deployerPolicy.test.ts",
  "test/components/hubConfiguration.test.ts",
  "test/components/identities.test.ts",
  "test/components/kmsKey.test.ts",
  "test/components/onRemoval.test.ts",
  "test/components/onboarding.test.ts",
  "test/components/planDiff.test.ts",
  "test/components/preflight.test.ts",
  "test/components/publishOwners.test.ts",
  "test/components/scriptsRelease.test.ts",
  "test/components/secondUp.test.ts",
  "test/components/secrets.test.ts",
  "test/components/sourceHash.test.ts",
  "test/components/stacks.test.ts",
  "test/components/tags.test.ts",
  "test/config/cliValues.test.ts",
  "test/config/concurrency.test.ts",
  "test/config/hubContract.test.ts",
  "test/config/validate.test.ts",
  "test/core/credentials.test.ts",
  "test/core/hubEndpoints.test.ts",
  "test/core/plan.test.ts",
  "test/core/redact.test.ts",
  "test/core/template.test.ts",
  "test/local/progress.test.ts",
  "test/local/summary.test.ts",
  "test/monitoring/alertsConfig.test.ts",
  "test/monitoring/monitoring.test.ts",
  "test/monitoring/noCompletedRun.test.ts",
  "test/providers/baseline.test.ts",
  "test/providers/login.test.ts",
  "test/providers/routingRules.test.ts",
  "test/providers/sqlRows.test.ts",
  "test/task/concurrency.test.ts",
  "test/task/requestBodies.test.ts",
];

// Hang guards, generous: a loaded machine runs a test of several task runs in minutes (the resume test's 22 kills
// took 190 s at a load of 20 on two cores).
const guards = { testTimeout: 420_000, hookTimeout: 300_000 };

export default defineConfig({
  test: {
    // Once for the run, for both projects: the embedded server, the task bundle, the run's temporary folder.
    globalSetup: ["test/support/globalSetup.ts"],
    // Two cores: files run in parallel forks; each gets its own database on the one embedded server.
    pool: "forks",
    maxWorkers: 2,
    projects: [
      { test: { name: "shared-modules", include: SHARED_MODULES, isolate: false, ...guards } },
      {
        test: {
          name: "isolated",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...SHARED_MODULES],
          ...guards,
        },
      },
    ],
  },
});
