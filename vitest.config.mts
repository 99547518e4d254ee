import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    // Hang guards, generous: a loaded machine runs a test of several task runs in minutes.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Two cores: files run in parallel forks; each gets its own database on the one embedded server.
    pool: "forks",
    maxWorkers: 2,
  },
});
