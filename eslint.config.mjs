// ESLint: typescript-eslint's recommended type-aware rules over the whole tree (formatting is prettier's).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", ".local/", ".tmp/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ["*.mjs", "*.cjs", "*.js", "bin/*.js", "scripts/*.js", "test/fixtures/*.cjs"],
        },
        tsconfigRootDir: import.meta.dirname,
      },
      globals: {
        require: "readonly",
        module: "writable",
        process: "readonly",
        console: "readonly",
        __dirname: "readonly",
        __filename: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        URL: "readonly",
        AbortController: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        fetch: "readonly",
        performance: "readonly",
        structuredClone: "readonly",
        queueMicrotask: "readonly",
        AbortSignal: "readonly",
      },
    },
  },
  {
    // Tests read plans, rows and JSON output as untyped data and assert on their shape.
    files: ["test/**"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    // Plain CommonJS scripts run by node before anything is built.
    files: ["**/*.js", "**/*.cjs"],
    ...tseslint.configs.disableTypeChecked,
    rules: { ...tseslint.configs.disableTypeChecked.rules },
  },
  {
    rules: {
      // An unused name starting with _ is on purpose (a destructured field left out, a required parameter).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // Interfaces that are async by contract (Pulumi's dynamic providers, commands, stores) have methods that need no await.
      "@typescript-eslint/require-await": "off",
      // Control characters are matched on purpose: terminal escapes are masked in everything shown.
      "no-control-regex": "off",
      // Modules are loaded where they are needed: commands on demand, SDKs lazily, providers inside their methods.
      "@typescript-eslint/no-require-imports": "off",
    },
  },
);
