/**
 * The one module a sandboxed run loads of svc: the public API (what the
 * user's `import … from 'svc'` gets) and the runner, bundled together so the
 * user's classes and the runner's registry share one `Walker`, one `Node`.
 */
export * from '../index.ts';
export { runSandbox } from './sandbox-main.ts';
