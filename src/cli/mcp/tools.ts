import type { CallToolResult, McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { MessageIntent } from '../../hub/contract/index.js';
import { plain } from '../../reader/index.js';
import {
  answerMessage,
  checkDestination,
  checkTextSize,
  failureContext,
  fleetView,
  formatFleet,
  hubFailureError,
  listText,
  queuedLines,
  resolveDestination,
  sendMessage,
  waitForResponse,
  waitResultLine,
  type AgentAccess,
  type Queued,
} from '../messaging/index.js';
import { EXIT, type CodedError } from '../../core/index.js';
import { asAgent, type McpContext } from './context.js';
import { MESSAGING_EXIT_TABLE } from '../messaging/exit.js';
import { toolError, toolResult } from './results.js';
import { idArg, limitArg, seconds, strictArgs, textArg, toArg } from './schemas.js';
import { statusResult } from './status.js';

/** The longest `oh_hai_ask` wait: an hour of progress notifications is as long as a tool call should hold a turn. */
export const ASK_WAIT_MAX_SECONDS = 3600;

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true } as const;
const SENDS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;

/** A refusal of a sending tool, with the advice of the command it stands for (oh-hai send, reply, messages, fleet). */
const refuse = (e: CodedError, extra: Parameters<typeof toolError>[1] = {}): CallToolResult => toolError(e, extra, MESSAGING_EXIT_TABLE);

function checkedText(text: string) {
  const r = checkTextSize(text);
  return r.ok ? null : refuse({ code: 'bad_text', exit: EXIT.usage, message: r.reason });
}

/** Send one intent and answer with the queued lines `oh-hai send|ask|task` prints, or the refusal. */
async function queue(
  ctx: McpContext,
  a: AgentAccess,
  tool: string,
  intent: MessageIntent,
  to: string,
  text: string,
): Promise<{ refused: CallToolResult } | { queued: Queued }> {
  const dest = checkDestination(to, 'to');
  if (!dest.ok) return { refused: refuse(dest.error) };
  const resolved = await resolveDestination(a, dest.value, 'to', new Date(ctx.io.clock.now()).toISOString());
  if (!resolved.ok) return { refused: refuse(resolved.error) };
  const sent = await sendMessage(a, ctx.knobs, (line) => ctx.say(`${tool}: ${line}`), { to: resolved.value.address, intent, text, command: tool });
  return sent.ok ? { queued: sent.value } : { refused: refuse(sent.error) };
}

function registerSend(server: McpServer, ctx: McpContext, tool: string, intent: 'notify' | 'task', description: string): void {
  server.registerTool(tool, { description, inputSchema: strictArgs(tool, { to: toArg, text: textArg }), annotations: SENDS }, async ({ to, text }) =>
    asAgent(ctx, tool, async (a): Promise<CallToolResult> => {
      const bad = checkedText(text);
      if (bad) return bad;
      const r = await queue(ctx, a, tool, intent, to, text);
      if ('refused' in r) return r.refused;
      const { message, route } = r.queued;
      return toolResult(queuedLines(message, route), { state: message.state, message, replies_to: route.address });
    }),
  );
}

/** A progress notification, when the client asked for them (a progressToken on the call). */
async function progress(c: ServerContext, n: number, total: number, message: string): Promise<void> {
  const token = c.mcpReq._meta?.progressToken;
  if (token === undefined) return;
  await c.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: n, total, message } });
}

function registerAsk(server: McpServer, ctx: McpContext): void {
  const tool = 'oh_hai_ask';
  server.registerTool(
    tool,
    {
      description:
        'Send an ask: a question the recipient answers with oh_hai_reply. The result says queued (never delivered). With wait_seconds it polls the message every 2 s, ' +
        'with a progress notification on each poll, and returns the response when it comes, or the delivery state when the wait ends.',
      inputSchema: strictArgs(tool, {
        to: toArg,
        text: textArg,
        wait_seconds: seconds('an ask waits at most an hour; check later with oh_hai_messages', 1, ASK_WAIT_MAX_SECONDS)
          .optional()
          .describe(`wait this long (1–${ASK_WAIT_MAX_SECONDS} s) for the response`),
      }),
      annotations: SENDS,
    },
    async ({ to, text, wait_seconds }, c) =>
      asAgent(ctx, tool, async (a): Promise<CallToolResult> => {
        const bad = checkedText(text);
        if (bad) return bad;
        const r = await queue(ctx, a, tool, 'ask', to, text);
        if ('refused' in r) return r.refused;
        const { message, route } = r.queued;
        const queuedText = queuedLines(message, route);
        if (wait_seconds === undefined) return toolResult(queuedText, { state: message.state, message, replies_to: route.address });
        const waitMs = wait_seconds * 1000;
        const polls = Math.max(1, Math.ceil(waitMs / ctx.knobs.askPollMs));
        const end = await waitForResponse(a.client, message, {
          waitMs,
          pollMs: ctx.knobs.askPollMs,
          clock: ctx.io.clock,
          signal: c.mcpReq.signal,
          onPoll: ({ n, message: m, failure }) =>
            progress(
              c,
              Math.min(n, polls),
              polls,
              failure ? `poll ${n}: the Hub did not answer (${failure.kind}); still waiting` : `poll ${n}: ${m.state}${m.response ? ', answered' : ''}`,
            ),
        });
        const text2 = queuedText + waitResultLine(end.message, `${wait_seconds}s`);
        const structured = { state: end.message.state, message: end.message, replies_to: route.address, wait: end.kind };
        if (end.kind === 'failure') {
          const e = hubFailureError(end.failure, failureContext(a, `waiting for the answer to ${message.id}`));
          return refuse({ ...e, message: `${e.message}; the ask is queued at the Hub — check later with oh_hai_messages` }, { text: text2, structured });
        }
        return toolResult(text2, structured);
      }),
  );
}

function registerReply(server: McpServer, ctx: McpContext): void {
  const tool = 'oh_hai_reply';
  server.registerTool(
    tool,
    {
      description:
        'Answer an ask or a task: id is the reply_id oh_hai_read returned (or the bridge printed after `reply:`; an entry id works too). The answer is queued, not delivered.',
      inputSchema: strictArgs(tool, {
        id: idArg,
        text: textArg,
      }),
      annotations: SENDS,
    },
    async ({ id, text }) =>
      asAgent(ctx, tool, async (a): Promise<CallToolResult> => {
        const bad = checkedText(text);
        if (bad) return bad;
        const answered = await answerMessage(a, ctx.knobs, (line) => ctx.say(`${tool}: ${line}`), { id, text });
        if (!answered.ok) return refuse(answered.error);
        const r = answered.value;
        if (r.kind === 'earlier') {
          return toolResult(
            `answered ${plain(r.messageId)} (an earlier attempt reached the Hub): response ${plain(r.response.message_id)} at ${r.response.at}\n`,
            {
              state: 'queued',
              answering: r.messageId,
              response: r.response,
            },
          );
        }
        return toolResult(`answering ${plain(r.messageId)}:\n` + queuedLines(r.message, r.route), {
          state: r.message.state,
          answering: r.messageId,
          message: r.message,
        });
      }),
  );
}

function registerMessages(server: McpServer, ctx: McpContext): void {
  const tool = 'oh_hai_messages';
  server.registerTool(
    tool,
    {
      description:
        'The delivery track of what this agent sent, newest first: queued → delivered → acknowledged, or bounced / expired (with how far it got), and any response.',
      inputSchema: strictArgs(tool, {
        limit: limitArg.optional(),
      }),
      annotations: READ_ONLY,
    },
    async ({ limit }) =>
      asAgent(ctx, tool, async (a): Promise<CallToolResult> => {
        const r = await a.client.listMessages({ direction: 'sent', limit });
        if (!r.ok) return refuse(hubFailureError(r.failure, failureContext(a, 'listing the messages you sent')));
        return toolResult(listText(r.value.messages, 'sent', r.value.next), { messages: r.value.messages, next: r.value.next });
      }),
  );
}

function registerFleet(server: McpServer, ctx: McpContext): void {
  const tool = 'oh_hai_fleet';
  server.registerTool(
    tool,
    {
      description:
        'Every session you can address in this account, with its reachability (online / offline / unknown — unknown is no signal, not down), its lease, and what this host knows of it.',
      inputSchema: strictArgs(tool, {}),
      annotations: READ_ONLY,
    },
    async () =>
      asAgent(ctx, tool, async (a): Promise<CallToolResult> => {
        const view = await fleetView(a, ctx.knobs, ctx.io.clock.now());
        if (!view.ok) return refuse(view.error);
        return toolResult(formatFleet(view.value), { ...view.value });
      }),
  );
}

function registerStatus(server: McpServer, ctx: McpContext): void {
  const tool = 'oh_hai_status';
  server.registerTool(
    tool,
    {
      description:
        "This agent session: its address, its lease (the Hub's expiry instant verbatim, and how long ago our side saw it renewed), the sender policy in force, and whether a background connection drains it.",
      inputSchema: strictArgs(tool, {}),
      annotations: READ_ONLY,
    },
    async () => asAgent(ctx, tool, (a) => statusResult(ctx, a)),
  );
}

/** Every tool but oh_hai_read, which lives with the reader (read.ts). */
export function registerMessagingTools(server: McpServer, ctx: McpContext): void {
  registerSend(
    server,
    ctx,
    'oh_hai_send',
    'notify',
    'Send a notify: information, no reply expected. The result says queued with the destination snapshot — queued is not delivered, and delivered is not read.',
  );
  registerAsk(server, ctx);
  registerSend(
    server,
    ctx,
    'oh_hai_task',
    'task',
    'Send a task: one action, with what done looks like; the recipient answers with oh_hai_reply. The result says queued, never delivered.',
  );
  registerReply(server, ctx);
  registerMessages(server, ctx);
  registerFleet(server, ctx);
  registerStatus(server, ctx);
}
