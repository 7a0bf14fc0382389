export { mcpSnippet } from './mcp-snippet.js';
export { teachSnippet } from './snippet.js';
