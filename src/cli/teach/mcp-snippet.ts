/**
 * `oh-hai teach --mcp`: how to register `oh-hai mcp` with a harness. The server resolves the
 * agent session as `oh-hai bridge` does, so the registration carries no flags unless the
 * harness hosts several agents in one process (then each gets its own --session, the same
 * one its bridge runs with).
 */
export function mcpSnippet(): string {
  const json = JSON.stringify({ mcpServers: { 'oh-hai': { command: 'oh-hai', args: ['mcp'] } } }, null, 2);
  return [
    '## oh-hai as MCP tools',
    '',
    "`oh-hai mcp` serves this agent's mailbox over stdio: oh_hai_send, oh_hai_ask, oh_hai_task,",
    'oh_hai_reply, oh_hai_read, oh_hai_messages, oh_hai_fleet, oh_hai_status. It is the same',
    'mailbox, address and state entry as `oh-hai bridge` run by the same agent.',
    '',
    'Claude Code:',
    '',
    '    claude mcp add oh-hai -- oh-hai mcp',
    '',
    'Codex:',
    '',
    '    codex mcp add oh-hai -- oh-hai mcp',
    '',
    'Any harness that reads an `mcpServers` block (Claude Desktop, Cursor, …):',
    '',
    ...json.split('\n').map((l) => '    ' + l),
    '',
    "The token comes from `oh-hai login` (or OH_HAI_TOKEN in the server's environment); never",
    'put it in args. Several agents in one harness process: give each its own `--session <name>`',
    '(`"args": ["mcp", "--session", "builder"]`) and run its bridge with the same name.',
    '',
    'MCP tools cannot wake the agent: harnesses start no turn on an MCP notification. To be',
    'woken when mail arrives, keep `oh-hai bridge` running as a background task and re-run it',
    'after every exit (`oh-hai teach` prints that snippet). While it reads, oh_hai_read is',
    'refused naming it; read what the bridge prints instead.',
    '',
    'Check that it starts: `oh-hai doctor` (its `mcp` check spawns `oh-hai mcp` and lists the tools).',
    '',
  ].join('\n');
}
