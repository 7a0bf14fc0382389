import { fail, ok, type Result } from '../../core/index.js';
import type { ConfigToken } from './config.js';

/**
 * The Hub's configured token store, `MA2H_AGENT_TOKENS` (`<agent_id>=<token>,…`, split at
 * the first `=`, spaces around a pair ignored). Unlike the CLI's parser this accepts any
 * non-empty id: the directory reports what the store holds, including ids a bridge could
 * never match (a `#`, whitespace, over 512 bytes), because dropping those is the
 * client's decision (product doc: "The sender policy").
 */
export function parseConfigTokens(raw: string): Result<ConfigToken[]> {
  const out: ConfigToken[] = [];
  const parts = raw.split(',').map((p) => p.trim());
  for (const [i, part] of parts.entries()) {
    const eq = part.indexOf('=');
    if (eq <= 0 || eq === part.length - 1) {
      return fail(`MA2H_AGENT_TOKENS pair ${i + 1} of ${parts.length} is not <agent_id>=<token>; the format is agt_a=TOKEN_A,agt_b=TOKEN_B`);
    }
    const agentId = part.slice(0, eq);
    const token = part.slice(eq + 1);
    const dup = out.find((t) => t.agentId === agentId);
    if (dup && dup.token !== token) return fail(`MA2H_AGENT_TOKENS names agent ${agentId} twice with different tokens; keep one`);
    if (!dup) out.push({ agentId, token });
  }
  return ok(out);
}
