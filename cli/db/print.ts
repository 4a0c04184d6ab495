/**
 * The text answers of `svc db` (with `--json`, the reports themselves are printed).
 */
import type { StoreStats } from '../../actors/graph/index.ts';
import { KINDS, type CopyReport } from './copy.ts';
import type { InspectReport, RecoverReport } from './inspect.ts';

/** What `svc db stats` answers. */
export interface StatsReport {
  store: string;
  /** The graph store's figures (null where its backend cannot tell). */
  graph: StoreStats | { kind: string; documents: number; nodes: null; edges: null; roots: null; byType: null; quarantined: number; aliases: number };
  users: { kind: string; users: number; deleted_users: number | null; one_time_tokens: number | null; pending_graph_drops: number | null };
}

function n(value: number | null | undefined): string {
  return value === null || value === undefined ? '?' : value.toLocaleString('en-US');
}

/** Rows as aligned columns. */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

export function printStats(r: StatsReport): string {
  const g = r.graph;
  const lines = [
    `store            ${r.store} (${g.kind})`,
    `documents        ${n(g.documents)} (nodes ${n(g.nodes)}, edges ${n(g.edges)})`,
    `roots            ${n(g.roots)}`,
    `quarantined      ${n(g.quarantined)}`,
    `aliases          ${n(g.aliases)}`,
    `users            ${n(r.users.users)}`,
    `deleted users    ${n(r.users.deleted_users)} (graphs still to drop: ${n(r.users.pending_graph_drops)})`,
    `one-time tokens  ${n(r.users.one_time_tokens)}`,
  ];
  if (g.byType && Object.keys(g.byType).length > 0) {
    const rows = Object.entries(g.byType)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([type, count]) => [type, n(count)]);
    lines.push('', table(['type', 'documents'], rows));
  }
  if ('backend' in g && g.backend) lines.push('', ...Object.entries(g.backend).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`));
  return lines.join('\n');
}

export function printInspect(r: InspectReport): string {
  const lines = [`store ${r.store}: ${n(r.documents)} documents, ${n(r.quarantined)} quarantined, ${r.aliases.length} aliases`];
  if (r.app === null) lines.push('no app given: documents are not decoded (--app <entry> tells which would go to quarantine)');
  const rows = r.types.map((t) => {
    const row = [t.type, t.kind, n(t.documents), Object.keys(t.fingerprints).join(',')];
    if (r.app !== null) {
      const to = t.resolves_to;
      row.push(to ? (to.class === t.type ? to.fingerprint : `${to.class} ${to.fingerprint}`) : '-', n(t.decodable), n(t.documents - (t.decodable ?? 0)));
    }
    return row;
  });
  const head = ['type', 'kind', 'documents', 'stored fingerprints'];
  if (r.app !== null) head.push('class now', 'load', 'quarantine');
  lines.push('', table(head, rows));
  if (r.app !== null) {
    lines.push('', r.would_quarantine ? `${n(r.would_quarantine)} documents would go to quarantine on load with ${r.app}:` : `every document loads with ${r.app}`);
    for (const t of r.types) for (const f of t.failing ?? []) lines.push(`  ${t.type}: ${n(f.count)} × ${f.reason} (e.g. ${f.ids.join(', ')})`);
  }
  if (r.aliases.length > 0) lines.push('', 'aliases:', ...r.aliases.map(([a, b]) => `  ${a} -> ${b}`));
  if (r.quarantine_reasons.length > 0) lines.push('', 'in quarantine:', ...r.quarantine_reasons.map((q) => `  ${n(q.count)} × ${q.reason}`));
  return lines.join('\n');
}

export function printQuarantine(list: { id: string; type: string; reason: string; at: string }[]): string {
  if (list.length === 0) return 'the quarantine is empty';
  return table(['id', 'type', 'reason', 'at'], list.map((q) => [q.id, q.type, q.reason, String(q.at)]));
}

export function printRecover(r: RecoverReport): string {
  const lines = [`recovered ${r.recovered.length}, ${r.remaining.length} still in quarantine (decoded against ${r.app})`];
  for (const q of r.recovered) lines.push(`  recovered ${q.id} (${q.type})`);
  for (const q of r.remaining) lines.push(`  remaining ${q.id} (${q.type}): ${q.reason}`);
  return lines.join('\n');
}

export function printCopy(r: CopyReport): string {
  const rows = KINDS.map((k) => {
    const v = r.verified[k];
    return [k, n(r.copied[k]), n(v.source.count), n(v.destination.count), v.equal ? 'equal' : 'DIFFERS'];
  });
  return [
    `copied ${r.from} -> ${r.to}${r.resumed ? ` (resumed after ${n(r.resumed.documents)} documents, ${n(r.resumed.users)} users)` : ''}`,
    '',
    table(['records', 'copied now', 'source', 'destination', 'checksum'], rows),
    '',
    r.ok ? 'verified: the destination holds exactly what the source holds' : `NOT EQUAL: ${r.differs.join(', ')}`,
  ].join('\n');
}
