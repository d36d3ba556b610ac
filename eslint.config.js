// ESLint (pinned in package.json) over the timeline page's JavaScript and
// the specs' node script; `make lint-js` runs it, and `make test` through spec/run-all.sh.
"use strict";
const js = require("@eslint/js");

module.exports = [
  js.configs.recommended,
  {
    files: ["lua/jobque_profile/page/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { window: "readonly", document: "readonly", performance: "readonly", location: "readonly",
                 MouseEvent: "readonly", WheelEvent: "readonly", KeyboardEvent: "readonly" },
    },
  },
  {
    // The hooks assign the page's view (v0, v1), and samples.js its draw, hit
    // and lastHit, globals here: see hooks.js and samples.js.
    files: ["lua/jobque_profile/page/hooks.js", "lua/jobque_profile/page/samples.js"],
    rules: { "no-unused-vars": ["error", { vars: "local" }] },
  },
  {
    // The specs' node script that reads traces with other programs (spec/record/consumers_spec.lua).
    files: ["spec/consumers/**/*.mjs"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { process: "readonly", Buffer: "readonly", TextDecoder: "readonly", TextEncoder: "readonly",
                 atob: "readonly", btoa: "readonly", URL: "readonly", setTimeout: "readonly",
                 clearTimeout: "readonly", performance: "readonly" },
    },
  },
  {
    // Perfetto's trace processor over its RPC (spec/record/samples_file_spec.lua).
    files: ["spec/consumers/**/*.cjs"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "commonjs",
      globals: { require: "readonly", process: "readonly", Buffer: "readonly", console: "readonly" },
    },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "writable" } },
  },
];
