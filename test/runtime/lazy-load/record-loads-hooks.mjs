// The load hook of record-loads.mjs: one line per ES module loaded, `<thread> import <url>`.
import { appendFileSync } from 'node:fs';

let file;
let who;

export function initialize(data) {
  file = data.file;
  who = data.who;
}

export async function load(url, context, next) {
  if (url.includes('/node_modules/')) appendFileSync(file, `${who} import ${url}\n`);
  return next(url, context);
}
