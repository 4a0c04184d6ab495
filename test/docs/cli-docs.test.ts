// `svc docs`: a real child process serves the documentation site (building it first into docs/.vitepress/dist
// when it is missing or older than the pages), answers real HTTP GETs of `/` and of a page on a free port of
// 127.0.0.1, refuses paths outside the site, and stops on SIGINT.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { fileFor, siteIsStale } from '../../cli/commands/docs.ts';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

t.setTimeout(200_000);

const BIN = fileURLToPath(new URL('../../bin/svc.mjs', import.meta.url));

t.test('siteIsStale: missing, older than a page, or fresh; fileFor: clean URLs inside the site only', async (t) => {
  const docs = mkdtempSync(join(tmpdir(), 'svc-docs-stale-'));
  t.teardown(() => rmSync(docs, { recursive: true, force: true }));
  const site = join(docs, '.vitepress', 'dist');
  writeFileSync(join(docs, 'page.md'), '# Page\n');
  t.ok(siteIsStale(docs, site), 'no built site');
  mkdirSync(join(site, 'guides'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<!doctype html>');
  writeFileSync(join(site, 'guides', 'testing.html'), '<!doctype html>');
  const past = new Date(Date.now() - 60_000);
  utimesSync(join(docs, 'page.md'), past, past);
  t.notOk(siteIsStale(docs, site), 'built after the last change');
  writeFileSync(join(docs, 'page.md'), '# Page, edited\n');
  utimesSync(join(site, 'index.html'), past, past);
  t.ok(siteIsStale(docs, site), 'a page changed since');
  t.equal(fileFor(site, '/guides/testing'), join(site, 'guides', 'testing.html'));
  t.equal(fileFor(site, '/'), join(site, 'index.html'));
  t.equal(fileFor(site, '/nope'), undefined);
  t.equal(fileFor(site, '/../page.md'), undefined, 'not outside the site');
  t.equal(fileFor(site, '/..%2fpage.md'), undefined, 'not outside the site, escaped');
});

t.test('svc docs serves the built site on a free port and stops on SIGINT', async (t) => {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [BIN, 'docs', '--port', '0', '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | string | null>((done) => child.once('exit', (code, signal) => done(code ?? signal)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const url = await new Promise<string>((done, fail) => {
    const onData = (d: Buffer) => {
      output += d;
      const m = /the documentation at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
      if (m) done(m[1] as string);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => fail(new Error(`svc docs exited (${code}) before serving:\n${output}`)));
  });
  t.not(new URL(url).port, '0', `serving at ${url}`);

  const home = await fetch(url);
  t.equal(home.status, 200, 'GET /');
  t.match(home.headers.get('content-type'), /text\/html/);
  t.match(await home.text(), /<title>[^<]*svc[^<]*<\/title>/, 'the site\'s home page');
  const page = await fetch(new URL('guides/testing', url));
  t.equal(page.status, 200, 'GET /guides/testing (a clean URL)');
  t.match(await page.text(), /Testing svc apps/, 'the testing page');
  const missing = await fetch(new URL('no-such-page', url));
  t.equal(missing.status, 404, 'an unknown page is 404');
  await missing.text();
  const outside = await fetch(`${url}..%2f..%2fpackage.json`);
  t.equal(outside.status, 404, 'nothing outside the site');
  await outside.text();

  child.kill('SIGINT');
  t.equal(await exited, 0, 'SIGINT stops it, exit code 0');
});

t.test('svc docs --port names a port in use: an error, not another port', async (t) => {
  const blocker = createServer();
  await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [BIN, 'docs', '--port', String(port)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  t.not(code, 0, 'fails');
  t.match(output, new RegExp(`cannot listen on 127\\.0\\.0\\.1, port ${port} \\(EADDRINUSE\\)`), output.trim());
});

t.test('svc docs where VitePress is not installed and the site not built: says where to read the docs, exit 1', async (t) => {
  // An installed svc has neither: the command's file in a folder of its own, outside any node_modules with VitePress.
  const pkg = mkdtempSync(join(tmpdir(), 'svc-docs-installed-'));
  t.teardown(() => rmSync(pkg, { recursive: true, force: true }));
  mkdirSync(join(pkg, 'cli', 'commands'), { recursive: true });
  mkdirSync(join(pkg, 'docs'));
  copyFileSync(fileURLToPath(new URL('../../cli/commands/docs.ts', import.meta.url)), join(pkg, 'cli', 'commands', 'docs.ts'));
  writeFileSync(join(pkg, 'docs', 'welcome.md'), '# Welcome\n');
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'svc', type: 'module' }));
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const tsx = import.meta.resolve('tsx');
  const script = `const { docs } = await import(${JSON.stringify(join(pkg, 'cli', 'commands', 'docs.ts'))}); await docs({ port: '0' });`;
  const child = spawn(process.execPath, ['--import', tsx, '--input-type=module', '-e', script], { env, cwd: pkg, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  t.equal(code, 1, 'exit code 1');
  t.match(output, /VitePress \(a development dependency of svc\) is not installed/, 'says why');
  t.match(output, join(pkg, 'docs'), 'names the markdown files');
  t.match(output, /svc mcp serves each page as svc:\/\/docs\/<topic>/, 'and the tool server');
  t.notMatch(output, /at .*\(|Error:/, 'no stack trace');
});
