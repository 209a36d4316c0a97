// Import rules checked by `npm run lint:deps` (dependency-cruiser): no cycles, the kernel below every
// other package, API definitions free of server code, packages reached only through their exports.
// What the packages' package.json "exports" reach; the not-to-unresolvable rule catches any other subpath.
const ENTRY_POINTS =
  "^packages/[^/]+/src/(index|testing/index)[.]ts$|^packages/http/src/(Api|admin/AdminRpc)[.]ts$|^packages/kernel/prices/"

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "Modules import each other in one direction only.",
      severity: "error",
      from: {},
      to: { circular: true }
    },
    {
      name: "kernel-imports-no-outer-package",
      comment:
        "The kernel is the bottom layer: its src imports no http, mcp, providers or storage package (its tests may use a store).",
      severity: "error",
      from: { path: "^packages/kernel/src/" },
      to: { path: "^packages/(http|mcp|providers|storage-[^/]+)/|^@taskmeter/(http|mcp|providers|storage-)" }
    },
    {
      name: "api-definitions-import-no-server-code",
      comment: "Api.ts and api/** describe the HTTP API for clients; handlers, the chat server and main implement it.",
      severity: "error",
      from: { path: "^packages/http/src/(Api[.]ts$|api/)" },
      to: { path: "^packages/http/(bin/|src/(handlers|chat|admin)/|src/(main|Server|Shutdown|index)[.]ts$)" }
    },
    {
      name: "packages-through-entry-points",
      comment:
        "Another package is reached through its package.json exports (@taskmeter/x, @taskmeter/x/testing), never its src files.",
      severity: "error",
      from: { path: "^packages/([^/]+)/" },
      to: { path: "^packages/", pathNot: ["^packages/$1/", ENTRY_POINTS] }
    },
    {
      name: "outside-packages-through-entry-points",
      comment: "bench/ and examples/ reach the packages through their package.json exports.",
      severity: "error",
      from: { path: "^(bench|examples|bin)/" },
      to: { path: "^packages/", pathNot: ENTRY_POINTS }
    },
    {
      name: "packages-by-name-not-path",
      comment: "A package is imported by its name (@taskmeter/x), not by a relative path into packages/.",
      severity: "error",
      from: { path: "^packages/([^/]+)/" },
      to: { path: "^packages/", pathNot: "^packages/$1/", dependencyTypes: ["local"], dependencyTypesNot: ["aliased-workspace"] }
    },
    {
      name: "outside-packages-by-name-not-path",
      comment: "bench/ and examples/ import a package by its name (@taskmeter/x), not by a relative path.",
      severity: "error",
      from: { path: "^(bench|examples|bin)/" },
      to: { path: "^packages/", dependencyTypes: ["local"], dependencyTypesNot: ["aliased-workspace"] }
    },
    {
      name: "not-to-unresolvable",
      comment: "Every import resolves: a typo, a missing dependency, or a subpath the package's exports do not offer.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true }
    }
  ],
  options: {
    includeOnly: "^(packages|bench|examples|bin)/|^vitest[.]config[.]ts$|^@taskmeter/",
    exclude: { path: "(^|/)node_modules/(?!@taskmeter/)" },
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    parser: "swc",
    combinedDependencies: false,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "node", "default", "types"],
      extensions: [".ts", ".js", ".json"]
    },
    cache: false
  }
}
