/**
 * Access levels (README *The programming model*). Every anchor has an owner root, which may do
 * anything; others get what the anchor grants everyone (`anyone`) or their
 * root specifically (`roots`), the higher of the two.
 */

export const AccessLevel = {
  NO_ACCESS: -1,
  READ: 0,
  CONNECT: 1,
  WRITE: 2,
} as const;
export type AccessLevel = (typeof AccessLevel)[keyof typeof AccessLevel];

/** What an anchor grants to roots other than its owner. */
export interface Access {
  anyone: AccessLevel;
  roots: Record<string, AccessLevel>;
}

export function privateAccess(): Access {
  return { anyone: AccessLevel.NO_ACCESS, roots: {} };
}

/** The level `root` has on an anchor owned by `owner` with `access`. */
export function levelOf(owner: string, access: Access, root: string): AccessLevel {
  if (owner === root) return AccessLevel.WRITE;
  const specific = access.roots[root];
  return specific === undefined ? access.anyone : (Math.max(specific, access.anyone) as AccessLevel);
}

export function isAccessLevel(x: unknown): x is AccessLevel {
  return x === -1 || x === 0 || x === 1 || x === 2;
}
