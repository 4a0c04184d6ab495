/**
 * Permissions: what the owner of a node or edge grants other roots
 * — everyone, or one root, at a level; checked by the walker
 * run when it changes, at commit when it is changed in place.
 */
import { type Access, type AccessLevel, isAccessLevel } from './access.ts';
import { ANCHOR, type Archetype, runFor } from './archetype.ts';
import { graphError } from './errors.ts';

/** Grant everyone `level` on a node or edge you own. */
export function permGrant(target: Archetype, level: AccessLevel): void {
  checkedLevel(level);
  changeAccess(target, (a) => {
    a.anyone = level;
  });
}

/** Remove everyone's access (explicit per-root grants stay). */
export function permRevoke(target: Archetype): void {
  changeAccess(target, (a) => {
    a.anyone = -1;
  });
}

/** Grant one root `level` on a node or edge you own. */
export function allowRoot(target: Archetype, rootId: string, level: AccessLevel): void {
  checkedLevel(level);
  changeAccess(target, (a) => {
    a.roots[rootId] = level;
  });
}

/** Remove one root's explicit grant. */
export function disallowRoot(target: Archetype, rootId: string): void {
  changeAccess(target, (a) => {
    delete a.roots[rootId];
  });
}

function checkedLevel(level: AccessLevel): AccessLevel {
  if (!isAccessLevel(level)) throw graphError('SVC_ERR_INVALID_FIELDS', `access level must be AccessLevel.NO_ACCESS, READ, CONNECT or WRITE, not ${String(level)}`);
  return level;
}

function changeAccess(target: Archetype, change: (access: Access) => void): void {
  const anchor = target[ANCHOR];
  const run = runFor(anchor);
  if (!run) {
    change(anchor.access);
    return;
  }
  run.setAccess(anchor, change);
}
