import type { CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { success, type Outcome } from '../../../core/index.js';
import { mcpSnippet, teachSnippet } from '../../teach/index.js';

export async function run(io: CliIO, opts: { mcp?: boolean } = {}): Promise<Outcome> {
  await writeFlushed(io.stdout, opts.mcp ? mcpSnippet() : teachSnippet());
  return success();
}
