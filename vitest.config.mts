import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    // Hang guards, generous: a loaded machine runs a test of several task runs in minutes (the resume test's 22 kills
    // took 190 s at a load of 20 on two cores).
    testTimeout: 420_000,
    hookTimeout: 300_000,
    // Two cores: files run in parallel forks; each gets its own database on the one embedded server.
    pool: "forks",
    maxWorkers: 2,
  },
});
