/**
 * The compiler tools of the tool server — `validate_svc`, `check_syntax`,
 * `get_ast`, and `lint_svc` beside them in ../lint/ — acting on one
 * TypeScript svc module with the TypeScript compiler API. Imports from
 * `'svc'` resolve to the generated public spec (../../grammar/spec.ts),
 * never to svc's sources.
 *
 * service.ts keeps one language service warm (files.ts: what it may read);
 * validate.ts, syntax.ts and ast.ts are the tools; problem.ts what they report.
 */
export { getAst, AST_NODE_LIMIT } from './ast.ts';
export type { Problem } from './problem.ts';
export { languageService } from './service.ts';
export { checkSyntax } from './syntax.ts';
export { isWarm, validateSvc, warmUp } from './validate.ts';
