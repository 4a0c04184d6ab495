#!/usr/bin/env node
// The svc command. `svc start` runs on svc's sources built once to plain JavaScript (bin/cli-bundle.mjs: no loader
// on its path, a start several times faster); every other command, or a start whose build cannot be made, runs the
// TypeScript sources through tsx.
import v8 from 'node:v8';
import { cliBundle, useBundle } from './cli-bundle.mjs';

// `svc start` (not a deploy, --scale): the young generation is held at its smallest from the first module on
// (transports/worker/heap.ts; released once the server is ready).
if (process.argv[2] === 'start' && !process.argv.includes('--scale') && !/semi[-_]space/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`)) v8.setFlagsFromString('--semi-space-growth-factor=1');

let built;
if (useBundle(process.argv, process.env)) {
  try {
    built = await cliBundle();
  } catch (error) {
    if (process.env.SVC_DEBUG_CLI_BUNDLE) process.stderr.write(`svc: the built CLI cannot be used (${error.message}); running the sources\n`);
  }
}
if (built) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/index.ts');
}
