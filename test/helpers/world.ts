import { afterAll, afterEach, beforeAll } from 'vitest';
import { startHub, type StartHubOptions, type TestHub } from './hub.js';

/**
 * The hooks every integration world is made of, registered in the scope (file or describe
 * block) that calls them. Vitest runs "before" hooks in the order they were registered and
 * "after" hooks in reverse, so what a world registers after its Hub is undone before the
 * Hub is disposed, and a file's own hooks registered after the world run inside it.
 */

/** A real Hub for every test of the scope: started before the first, disposed after the last. */
export function useHub(opts: StartHubOptions = {}): { readonly hub: TestHub } {
  let hub: TestHub | undefined;
  beforeAll(async () => {
    hub = await startHub(opts);
  });
  afterAll(async () => {
    await hub?.dispose();
  });
  return {
    get hub(): TestHub {
      if (hub === undefined) throw new Error('the Hub is started in beforeAll: read it inside a test or a hook');
      return hub;
    },
  };
}

/**
 * Track what a test makes so it is undone after that test, in the order it was made, even
 * when the test failed (`failed` lets the undo print what helps to read the failure).
 * Returns `keep`, which records a thing and hands it back.
 */
export function undoAfterEach<T>(undo: (made: T, failed: boolean) => void | Promise<void>): (made: T) => T {
  const made: T[] = [];
  afterEach(async (ctx) => {
    const failed = ctx.task.result?.state === 'fail';
    const errors: unknown[] = [];
    for (const m of made.splice(0)) {
      try {
        await undo(m, failed);
      } catch (e) {
        // Undo the rest anyway: one stuck cleanup must not leave the others' processes running.
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return (m) => {
    made.push(m);
    return m;
  };
}
