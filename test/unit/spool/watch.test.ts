import { appendFileSync, mkdtempSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFiles } from '../../../src/spool/watch.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A waiting reader rehearses its watch's event path before it sleeps (Watching.rehearse): Node
 * compiles its own handler of a watch's events on the first event, which was the wake's. The
 * rehearsal must go through that handler, fire no callback, and leave the watch working.
 */
describe('Watching.rehearse', () => {
  let dir = '';
  // Node's FSWatcher class, whose instances' handler emits 'change' (fs does not export it).
  const probe = watch(os.tmpdir());
  const proto = Object.getPrototypeOf(probe) as FSWatcher;
  probe.close();
  const emit = proto.emit;
  afterEach(() => {
    proto.emit = emit;
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs Node's event handler on an unwatched name, fires nothing, and the next real change still fires", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-watch-'));
    writeFileSync(path.join(dir, 'bridge.ndjson'), '');
    const events: unknown[] = [];
    proto.emit = function (this: FSWatcher, name: string | symbol, ...args: unknown[]) {
      if (name === 'change') events.push(args[1]);
      return emit.call(this, name, ...args);
    };
    let changes = 0;
    const watching = watchFiles(dir, ['bridge.ndjson'], () => changes++);
    try {
      watching.rehearse();
      // Node's handler ran (on a Node without it the rehearsal does nothing: this says so), on a name no state dir has.
      expect(events.length).toBeGreaterThanOrEqual(8);
      expect(new Set(events)).toEqual(new Set(['.rehearsal']));
      expect(changes).toBe(0);
      appendFileSync(path.join(dir, 'bridge.ndjson'), 'x\n');
      await waitFor(() => changes > 0, { what: 'the append to fire the watch' });
    } finally {
      watching();
    }
  });
});
