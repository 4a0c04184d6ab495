/** Errors of the composition root (`SVC_ERR_RUNTIME_*`); listed in `docs/errors.md`. */
export const RUNTIME_ERRORS = {
  SVC_ERR_RUNTIME: { status: 500, message: 'the runtime is wired wrongly (a module needs a service no module before it provides, or two provide one)' },
} as const;
