/**
 * `svc_to_js`, `py_to_svc` and `svc_to_py`: transpiling an svc module, and a
 * documented best-effort translation of *declarations* between Python and
 * svc. Nothing here runs the code it reads, and Python is never needed.
 *
 * One file per direction: `to-js.ts`, `py-to-svc.ts` (which reads Python
 * with `python-source.ts` and `python-types.ts`) and `svc-to-py.ts`;
 * `svc-classes.ts` holds what both translations know of svc's classes.
 */
export { pyToSvc } from './py-to-svc.ts';
export type { SvcResult } from './py-to-svc.ts';
export { SVC_RESERVED_FIELDS } from './svc-classes.ts';
export { svcToPy } from './svc-to-py.ts';
export type { PyResult } from './svc-to-py.ts';
export { svcToJs } from './to-js.ts';
export type { JsResult } from './to-js.ts';
