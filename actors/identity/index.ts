/** Users, tokens and their graphs. */
export { rootIdFor } from './root-id.ts';
