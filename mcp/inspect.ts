/**
 * `svc mcp --inspect`: what a client of these settings would be offered, as
 * text — resources, tools (with their parameters) and prompts (with their
 * arguments, `?` marking optional ones).
 */
import { describeMcp, type McpSettings } from './server.ts';

/**
 * @example process.stdout.write(formatInspection(MCP_DEFAULTS));
 */
export function formatInspection(settings: McpSettings): string {
  const { resources, tools, prompts } = describeMcp(settings);
  const lines = [`Resources (${resources.length})`];
  for (const r of resources) lines.push(`  ${r.uri}  ${r.description}`);
  lines.push('', `Tools (${tools.length})`);
  for (const t of tools) lines.push(`  ${t.name}(${t.parameters.join(', ')})`);
  lines.push('', `Prompts (${prompts.length})`);
  for (const p of prompts) lines.push(`  ${p.name}(${p.arguments.map((a) => (a.required ? a.name : `${a.name}?`)).join(', ')})`);
  return `${lines.join('\n')}\n`;
}
