/**
 * What the compiler tools report: a problem at a 1-based line and column of
 * the snippet, and the conversion from a position in its text.
 */
import type ts from 'typescript';

/**
 * One problem: 1-based line and column.
 *
 * @example
 * const p: Problem = { line: 3, col: 22, message: "Property 'nope' does not exist on type 'Root'." };
 */
export interface Problem {
  line: number;
  col: number;
  message: string;
  /** `TS2339` for a TypeScript diagnostic, the rule for an svc check (`svc/unknown-field`): what `explain_error` takes too. */
  code?: string;
}

/** The 1-based line and column of a position of `sf` (past the end: its end). */
export function at(sf: ts.SourceFile, pos: number): { line: number; col: number } {
  const { line, character } = sf.getLineAndCharacterOfPosition(Math.min(pos, sf.text.length));
  return { line: line + 1, col: character + 1 };
}
