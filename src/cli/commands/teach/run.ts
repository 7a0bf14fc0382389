import type { CliIO } from '../../io.js';
import { writeFlushed } from '../../io.js';
import { success, type Outcome } from '../../outcome.js';
import { teachSnippet } from './snippet.js';

export async function run(io: CliIO): Promise<Outcome> {
  await writeFlushed(io.stdout, teachSnippet());
  return success();
}
