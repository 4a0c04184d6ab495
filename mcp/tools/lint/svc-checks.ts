/**
 * The svc checks, run by `validate_svc` and `lint_svc`: one file per rule
 * under svc/ (rule `svc/x` in svc/x.ts, which says what it finds), in this
 * order — `svc/ability-type`, `svc/walker-without-entry`,
 * `svc/unknown-field` and `svc/undeclared-field` (svc/unknown-field.ts: one
 * check of a member that does not resolve), `svc/field-not-in-has` and
 * `svc/field-initializer` (svc/field-declarations.ts: one check of the fields
 * a class declares), `svc/access-value`, `svc/public-spawns-private`.
 */
import type ts from 'typescript';
import { Facts } from './facts.ts';
import type { Finding } from './finding.ts';
import { checkAbilities } from './svc/ability-type.ts';
import { checkAccess } from './svc/access-value.ts';
import { checkFieldDeclarations } from './svc/field-declarations.ts';
import { checkPublicSpawns } from './svc/public-spawns-private.ts';
import { checkUnknownFields } from './svc/unknown-field.ts';
import { checkWalkersHaveEntry } from './svc/walker-without-entry.ts';

/**
 * The svc checks, where a check that fails on unusual code is reported as a
 * warning naming the failure (TypeScript's diagnostics still come back).
 */
export function safeSvcChecks(sf: ts.SourceFile, program: ts.Program): Finding[] {
  try {
    return svcChecks(new Facts(sf, program));
  } catch (error) {
    return [{ start: 0, rule: 'svc/internal', severity: 'warning', message: `the svc checks failed on this module (${error instanceof Error ? error.message : String(error)}); only TypeScript's diagnostics are reported` }];
  }
}

/** Every svc check over the snippet, in the order above. */
function svcChecks(facts: Facts): Finding[] {
  return [...checkAbilities(facts), ...checkWalkersHaveEntry(facts), ...checkUnknownFields(facts), ...checkFieldDeclarations(facts), ...checkAccess(facts), ...checkPublicSpawns(facts)];
}
