#!/usr/bin/env node
// The svc command: TypeScript sources run through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../cli/index.ts');
