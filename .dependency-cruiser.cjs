/**
 * The layering (issue 13, docs/internals.md "Layers"):
 *   core ← util ← contract ← (spool, config, client, spawn) ← (consumer, reader) ← cli
 * A module may import only from its own layer or below. No command folder imports another
 * command folder (shared code lives in src/cli/messaging, src/cli/resolve or a lower layer), a
 * command folder holds only register.ts and run.ts,
 * and the reference Hub server never imports the CLI. `npm run lint:layers` runs it; .ci/run
 * fails on a violation.
 */
const LAYERS = [
  ['core', '^src/core/'],
  ['util', '^src/util/'],
  ['contract', '^src/hub/contract/'],
  ['spool, config, client, spawn', '^src/(spool|config|spawn|hub/client)/'],
  ['consumer, reader', '^src/(consumer|reader)/'],
];
const ALL_ABOVE = (i) =>
  LAYERS.slice(i + 1)
    .map(([, re]) => re)
    .concat(['^src/cli/', '^src/hub/server/']);

module.exports = {
  forbidden: [
    ...LAYERS.map(([name, re], i) => ({
      name: `layer-${name.replace(/, /g, '-')}`,
      comment: `${name} imports only from its own layer or below (core ← util ← contract ← spool/config/client/spawn ← consumer/reader ← cli)`,
      severity: 'error',
      from: { path: re },
      to: { path: ALL_ABOVE(i) },
    })),
    {
      name: 'same-layer-siblings',
      comment: 'spool, config, the Hub client and spawn are siblings that do not know each other, except config and spool reading the contract below them',
      severity: 'error',
      from: { path: '^src/(spool|spawn|hub/client)/' },
      to: { path: '^src/(config|spawn|spool|hub/client)/', pathNot: ['^src/$1/'] },
    },
    {
      name: 'no-command-imports-another',
      comment: 'a command folder imports no other command folder: shared code goes in src/cli/messaging, src/cli/resolve or a lower layer',
      severity: 'error',
      from: { path: '^src/cli/commands/([^/]+)/' },
      to: { path: '^src/cli/commands/[^/]+/', pathNot: '^src/cli/commands/$1/' },
    },
    {
      name: 'thin-command-folders',
      comment:
        'a command folder holds register.ts and run.ts only: library code lives in its library folder (src/reader, src/spool, src/config, src/hub/…) or a shared src/cli module',
      severity: 'error',
      from: { path: '^src/cli/commands/[^/]+/', pathNot: '^src/cli/commands/[^/]+/(register|run)\\.ts$' },
      to: {},
    },
    {
      name: 'thin-command-folders-imported',
      comment: 'nothing imports a module of a command folder but its register.ts and run.ts (see thin-command-folders)',
      severity: 'error',
      from: {},
      to: { path: '^src/cli/commands/[^/]+/', pathNot: '^src/cli/commands/[^/]+/(register|run)\\.ts$' },
    },
    {
      name: 'thin-command-folders-orphan',
      comment: 'a module in a command folder that imports nothing and nothing imports is still library code out of place (see thin-command-folders)',
      severity: 'error',
      from: { orphan: true, path: '^src/cli/commands/[^/]+/', pathNot: '^src/cli/commands/[^/]+/(register|run)\\.ts$' },
      to: {},
    },
    {
      name: 'hub-server-not-cli',
      comment: 'the reference Hub server never imports the CLI (nor the agent side above the contract)',
      severity: 'error',
      from: { path: '^src/hub/server/' },
      to: { path: '^src/(cli|consumer|reader|spool|spawn)/' },
    },
    {
      name: 'consumer-through-its-index',
      comment: "the consumer's internals are its own: others use src/consumer/index.ts",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/consumer/' },
      to: { path: '^src/consumer/', pathNot: '^src/consumer/index\\.ts$' },
    },
    {
      name: 'reader-through-its-index',
      comment: "the reader's internals are its own: others use src/reader/index.ts",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/reader/' },
      to: { path: '^src/reader/', pathNot: '^src/reader/index\\.ts$' },
    },
    {
      name: 'consumer-hub-through-its-port',
      comment:
        "the consumer reaches the Hub only through the port it is given (src/consumer/hub-port.ts, ConsumerOptions.hub), so its unit tests run on a fake Hub; elsewhere it may import the client's types only",
      severity: 'error',
      from: { path: '^src/consumer/', pathNot: '^src/consumer/hub-port\\.ts$' },
      to: { path: '^src/hub/client/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'reader-never-talks-to-the-hub',
      comment: 'the reader reads the state entry only: the background connection is the one process that talks to the Hub for it',
      severity: 'error',
      from: { path: '^src/reader/' },
      to: { path: '^src/hub/client/' },
    },
    {
      name: 'no-circular-layers',
      comment: 'no import cycle across folders',
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { circular: true, path: '^src/', pathNot: '^src/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|dist|scripts)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.cts', '.js'] },
  },
};
