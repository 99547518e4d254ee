// The layers of docs/developing.md ("Layers"), checked by `npm run lint:deps` and by test/layers.test.ts. Each folder
// imports only the folders below it; type-only imports count too (they are dependencies of the design).
"use strict";

/** Folders a layer must not import, as a path regex. */
const folders = (...names) => `^(${names.join("|")})/`;
const SHIPPED =
  "^(index\\.ts|core|cls|config|templates|providers|task|emulator|components|local|operate|cli|scripts|bin)";

const layer = (name, from, notTo, comment) => ({
  name,
  severity: "error",
  comment,
  from: { path: from },
  to: { path: notTo },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle: split the shared part into a module both import.",
      from: {},
      to: { circular: true },
    },
    layer(
      "core-imports-nothing-of-ours",
      "^core/",
      folders(
        "config",
        "cls",
        "templates",
        "providers",
        "task",
        "emulator",
        "components",
        "local",
        "operate",
        "cli",
        "bench",
        "test",
      ),
      "core/ is pure and at the bottom: it imports only core/.",
    ),
    layer(
      "nothing-below-config-imports-it",
      "^(core|task|cls|templates|providers|emulator)/",
      "^config/",
      "Below config/, the validated configuration is core's StackConfig (core/stackConfig.ts), which the zod schema produces: nothing there imports config/, types included.",
    ),
    layer(
      "cls-imports-core",
      "^cls/",
      folders("templates", "providers", "task", "emulator", "components", "local", "operate", "cli"),
      "cls/ (the CLS code lists) imports only core/.",
    ),
    layer(
      "templates-import-core",
      "^templates/",
      folders("cls", "providers", "task", "emulator", "components", "local", "operate", "cli"),
      "templates/ imports only core/.",
    ),
    layer(
      "config-imports-core-and-cls",
      "^config/",
      folders("templates", "providers", "task", "emulator", "components", "local", "operate", "cli"),
      "config/ (the stack config, validated once) imports core/ and cls/.",
    ),
    layer(
      "providers-import-core",
      "^providers/",
      folders("cls", "templates", "task", "emulator", "components", "local", "operate", "cli"),
      "providers/ (custom resources, serialized with what they capture) import only core/.",
    ),
    layer(
      "emulator-imports-core",
      "^emulator/",
      folders("cls", "templates", "providers", "task", "components", "local", "operate", "cli"),
      "emulator/ (the local hub) imports only core/.",
    ),
    layer(
      "task-imports-core-and-cls",
      "^task/",
      folders("templates", "providers", "emulator", "components", "local", "operate", "cli"),
      "task/ (the container's export task) imports core/, cls/ and task/: its bundle carries no stack config.",
    ),
    layer(
      "components-below-local-operate-cli",
      "^(components/|index\\.ts$)",
      folders("task", "emulator", "local", "operate", "cli"),
      "The Pulumi program imports core/, cls/, config/, templates/ and providers/.",
    ),
    {
      ...layer(
        "local-below-cli",
        "^local/",
        folders("components", "cli"),
        "local/ (npm start) uses the layers below it and operate/'s queries, never the Pulumi program nor the CLI.",
      ),
    },
    layer(
      "operate-below-cli",
      "^operate/",
      folders("components", "local", "cli"),
      "operate/ (actions on a deployed stack) uses the layers below it, never local/ nor the CLI.",
    ),
    {
      ...layer(
        "shipped-not-to-bench-or-test",
        SHIPPED,
        folders("bench", "test"),
        "Shipped code never imports the benchmarks or the tests (the CLI loads bench/ by name, on demand).",
      ),
    },
    {
      name: "pulumi-sdk-public-entry-points",
      severity: "error",
      comment:
        "@pulumi/pulumi only through its public entry points: the package and its namespaces (asset, automation, dynamic, iterable, log, provider, runtime, utils), never a module under them, so that an SDK upgrade is a version bump. The tests' engine hosts (test/fixtures) load the CLI's own modules.",
      from: { pathNot: "^test/" },
      to: {
        path: "(^|/)node_modules/@pulumi/pulumi/",
        pathNot:
          "(^|/)node_modules/@pulumi/pulumi/(index|utils|(asset|automation|dynamic|iterable|log|provider|runtime)/index)\\.(js|d\\.ts)$",
      },
    },
    layer(
      "bench-not-to-test",
      "^bench/",
      folders("test"),
      "Benchmarks run from the CLI: they use shipped code, never the test suite's (tests may use the benchmarks' platform).",
    ),
  ],
  options: {
    // node_modules is in the graph, not followed: pulumi-sdk-public-entry-points sees what is imported from it.
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|\\.local|\\.tmp|coverage)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".cjs", ".json"] },
  },
};
