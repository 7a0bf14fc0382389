// Preload for settings-race.test.ts (NODE_OPTIONS=--require=<this file>). A background
// connection (`oh-hai __consumer`) started with $OH_HAI_TEST_CONSUMER_GATE set halts before it
// loads the CLI — so before it takes the entry's lock — creates <gate>/gated.<pid>, and goes on
// once the test creates <gate>/open.<pid> (or after 60 s, so nothing is left hanging). Every
// other process (the bridge, the spawn intermediate) passes straight through.
const { existsSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const gate = process.env.OH_HAI_TEST_CONSUMER_GATE;
if (gate && process.argv.includes('__consumer')) {
  writeFileSync(path.join(gate, `gated.${process.pid}`), '');
  const open = path.join(gate, `open.${process.pid}`);
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 60_000;
  while (!existsSync(open) && Date.now() < deadline) Atomics.wait(nap, 0, 0, 10);
}

// With $OH_HAI_TEST_CONSUMER_LOCKED_GATE set instead, a connection halts once it holds the
// entry's lock and before it has recorded itself: at its first write of settings.json, which
// it makes under the lock before its record. It creates <gate>/locked.<pid> and goes on once
// the test creates <gate>/open.<pid> (or after 60 s).
const locked = process.env.OH_HAI_TEST_CONSUMER_LOCKED_GATE;
if (locked && process.argv.includes('__consumer')) {
  const fs = require('node:fs');
  const openSync = fs.openSync;
  let held = false;
  fs.openSync = function (file, ...rest) {
    if (!held && typeof file === 'string' && path.basename(file).startsWith('.settings.json.')) {
      held = true;
      writeFileSync(path.join(locked, `locked.${process.pid}`), '');
      const open = path.join(locked, `open.${process.pid}`);
      const nap = new Int32Array(new SharedArrayBuffer(4));
      const deadline = Date.now() + 60_000;
      while (!existsSync(open) && Date.now() < deadline) Atomics.wait(nap, 0, 0, 10);
    }
    return openSync.call(this, file, ...rest);
  };
  require('node:module').syncBuiltinESMExports();
}
