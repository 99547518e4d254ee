import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * Three tiers, each a vitest project with only the setup its tests need (docs/developing.md, "Tests"):
 * - unit (`*.test.ts`): pure and in-process: no PostgreSQL, no task bundle, no child process. `npm run test:quick`.
 * - integration (`*.int.test.ts`): the embedded PostgreSQL, the task's bundle run as the image runs it, the emulator.
 * - e2e (`*.e2e.test.ts`): the real launcher, `npm start`, the docs' commands, the engine's language host.
 * Files share their workers' loaded modules (isolate: false): a test that changes a global (the environment, timers)
 * restores it (vi.stubEnv is undone after each test).
 */
const INTEGRATION = "test/**/*.int.test.ts";
const E2E = "test/**/*.e2e.test.ts";

// Hang guards, generous: a loaded machine runs a test of several task runs in minutes.
const tier = (name: string, include: string[], globalSetup: string, exclude: string[] = []) =>
  ({
    extends: true,
    test: { name, include, exclude, globalSetup: [globalSetup], setupFiles: ["/work/notes/cpuProbe.ts"] },
  }) satisfies TestProjectInlineConfiguration;

export default defineConfig({
  test: {
    // Two cores: files run in parallel forks, each keeping its modules for the next file.
    pool: "forks",
    maxWorkers: 2,
    isolate: false,
    unstubEnvs: true,
    testTimeout: 420_000,
    hookTimeout: 300_000,
    projects: [
      tier("unit", ["test/**/*.test.ts"], "test/support/runFolder.ts", [INTEGRATION, E2E]),
      tier("integration", [INTEGRATION], "test/support/platformSetup.ts"),
      tier("e2e", [E2E], "test/support/platformSetup.ts"),
    ],
  },
});
