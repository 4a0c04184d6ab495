/**
 * What both translations know of svc's classes: the kind of class each svc
 * base class makes (a node, an edge, a walker; anything else is plain) and
 * the field names svc refuses on each kind.
 */

/** The kind of class a translated class is: svc's node, edge or walker, or a plain class. */
export type Kind = 'node' | 'edge' | 'walker' | 'plain';

/** svc's base classes by name, and the kind of class each makes. */
export const SVC_BASES: Record<string, Kind> = { Node: 'node', Root: 'node', Edge: 'edge', GenericEdge: 'edge', Walker: 'walker' };

/**
 * Field names svc refuses on each kind (members of its base classes, plus
 * `constructor`, `toJSON`, `source`, `target`): a class declaring one fails to
 * load. A test compares these lists with the classes themselves.
 *
 * @example
 * SVC_RESERVED_FIELDS.walker.includes('report') // true
 */
export const SVC_RESERVED_FIELDS = {
  node: ['constructor', 'toJSON', 'source', 'target', 'connect', 'connectFrom', 'link', 'out', 'in', 'outEdges', 'inEdges', 'disconnect', 'walk', 'id', 'destroy'],
  edge: ['constructor', 'toJSON', 'source', 'target', 'sourceId', 'targetId', 'id', 'destroy'],
  walker: ['constructor', 'toJSON', 'source', 'target', 'state', 'report', 'visit', 'disengage', 'skip', 'spawn', 'root', 'caller', 'reports', 'traceId', 'log', 'connection', 'join', 'leave', 'sendTo'],
} as const;
