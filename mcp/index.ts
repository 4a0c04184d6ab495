/**
 * The tool-protocol server (`svc mcp`; README "`svc mcp`"): resources, tools and
 * prompts for AI clients writing svc apps, over stdio, SSE or streamable HTTP.
 */
export { createMcpServer, describeMcp, MCP_DEFAULTS, TOOLS } from './server.ts';
export type { McpSettings } from './server.ts';
export { listenMcpHttp, isLoopback, McpConfigError, MAX_BODY_BYTES, MAX_SESSIONS, SESSION_IDLE_MS } from './http.ts';
export type { McpHttpOptions, McpHttpServer } from './http.ts';
export { MAX_QUEUE, ToolPool, ToolTimeoutError } from './pool.ts';
export type { ToolCallInfo, ToolPoolOptions } from './pool.ts';
export { MAX_INPUT_BYTES, TOOL_TIMEOUT_MS, ToolBusyError, ToolInputError } from './types.ts';
export type { ToolResult } from './types.ts';
export { formatInspection } from './inspect.ts';
export { useCommandTable } from './tools/commands.ts';
export type { CommandTable } from './tools/commands.ts';
