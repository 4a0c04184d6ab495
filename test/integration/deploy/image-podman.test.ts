// The app's image for real, as a user makes it: `svc start app.ts --scale --build --no-push` with svc.toml naming a base
// image made from this machine's Node (no registry can be pulled from), `image_deps = "host"` and a docker-compatible
// wrapper of podman as `container_cli`; the generated Dockerfile built by `podman build`, run as a pod
// runs it (read-only root, tmpfs at /tmp, /app/.svc and /app/node_modules/.cache), /healthz/ready and walkers answered
// on a published loopback port, then SIGTERM drains it and it exits 0. Skipped — loudly — where podman cannot run.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SVC_ROOT } from '../../../deploy/image/index.ts';
import { freePort, Podman, podmanAvailable, runSvc } from '../../kit/index.ts';

const APP = `import { entry, Node, Root, T, Walker } from 'svc';

export class Note extends Node {
  static has = T.Object({ text: T.String() });
  declare text: string;
}

export class Echo extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ text: T.String() });
  declare text: string;
  @entry(Root) echo() {
    this.report({ echo: this.text });
  }
}

export class AddNote extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ text: T.String() });
  declare text: string;
  @entry(Root) async add(here: Root) {
    this.report(await here.connect(new Note({ text: this.text })));
  }
}

export class ListNotes extends Walker {
  static access = 'pub' as const;
  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Note));
  }
  @entry(Note) each(here: Note) {
    this.report(here.text);
  }
}
`;

/** As a pod runs the image: a read-only root file system, writable (empty) folders where svc writes. */
const POD_MOUNTS = ['--read-only', '--tmpfs', '/tmp', '--tmpfs', '/app/.svc', '--tmpfs', '/app/node_modules/.cache'];

/**
 * Remove the test's image and the intermediate layers of its build (a build beside another one shares them: both
 * images removed, they would stay behind untagged) — never the base image, nor a layer another image still uses.
 */
async function removeImage(podman: Podman, ref: string, base: string): Promise<void> {
  const history = await podman.run(['history', '--format', '{{.ID}}', ref]);
  const baseId = (await podman.run(['image', 'inspect', '--format', '{{.Id}}', base])).stdout.trim();
  await podman.run(['rmi', '-f', ref]);
  const layers = history.stdout.split('\n').map((id) => id.trim()).filter((id) => /^[0-9a-f]{12,}$/.test(id) && !baseId.startsWith(id));
  for (const id of layers) {
    const tags = await podman.run(['image', 'inspect', '--format', '{{len .RepoTags}}', id]);
    if (tags.code === 0 && tags.stdout.trim() === '0') await podman.run(['rmi', id]);
  }
}

const why = await podmanAvailable();
if (why) t.comment(`SKIPPED: the image is not built or run for real on this machine: ${why}`);

t.test('the image for real: built by podman from a local Node base, ready, serving walkers, drained by SIGTERM with exit 0', { skip: why ?? false, timeout: 180_000 }, async (t) => {
  const began = Date.now();
  const podman = await Podman.open();
  let at = Date.now();
  const base = await podman.ensureNodeBaseImage();
  const baseMs = Date.now() - at;

  // A project as a user has it: package.json naming svc as a file: dependency, and a .env with a secret.
  const project = mkdtempSync(join(tmpdir(), 'svc-image-app-'));
  t.teardown(() => rmSync(project, { recursive: true, force: true }));
  writeFileSync(join(project, 'app.ts'), APP);
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'image-fixture', version: '1.0.0', type: 'module', dependencies: { svc: `file:${SVC_ROOT}` } }, null, 2)}\n`);
  writeFileSync(join(project, '.env'), 'SVC_REGISTRY_USERNAME=someone\nSVC_REGISTRY_PASSWORD=never-in-the-image\n');

  // A repository of this run's own: test files running at once build the same tag, and removing one's image would stop the other's container.
  const run = `${process.pid}-${randomBytes(3).toString('hex')}`;
  writeFileSync(
    join(project, 'svc.toml'),
    [
      '[scale.orchestrator]',
      `app_name = "svc-image-test-${run}"`,
      `base_image = "${base}"`,
      'image_deps = "host"',
      `container_cli = "${podman.wrapper()}"`,
      'registry = "localhost"',
      '[scale.jwt]',
      'secret = "a-secret-of-the-file-that-stays-out-0123456789"',
      '',
    ].join('\n'),
  );
  at = Date.now();
  const built = await runSvc(['start', join(project, 'app.ts'), '--scale', '--build', '--no-push'], { clean: true, cwd: project });
  const buildMs = Date.now() - at;
  t.equal(built.code, 0, built.stderr);
  const ref = /^Image built: (\S+)$/m.exec(built.stdout)?.[1] ?? '';
  t.match(ref, new RegExp(`^localhost/svc-image-test-${run}:[0-9a-f]{12}$`), 'the content-tagged reference');
  t.teardown(() => removeImage(podman, ref, base));
  t.match(built.stderr, / build -t /, 'built through the docker-compatible command');
  t.notMatch(built.stdout + built.stderr, 'never-in-the-image', 'the registry password (in .env) appears nowhere');
  t.match(built.stdout, /Run it here as a pod would: docker run --rm -p 127\.0\.0\.1:8000:8000 --read-only/, 'and how to run it is said');
  const size = Number((await podman.ok(['image', 'inspect', '--format', '{{.Size}}', ref])).trim());
  t.ok(size > 0, 'the image is in the local store');
  t.equal((await podman.ok(['image', 'inspect', '--format', '{{.Config.User}}', ref])).trim(), '1000:1000', 'it runs as a non-root user');

  const port = await freePort();
  const name = `svc-image-test-${run}`;
  at = Date.now();
  const id = (
    await podman.ok(['run', '-d', '--name', name, '-p', `127.0.0.1:${port}:8000`, ...POD_MOUNTS, '-e', `JWT_SECRET=${randomBytes(32).toString('hex')}`, ref])
  ).trim();
  t.teardown(() => podman.run(['rm', '-f', '--time', '0', id]));
  const base_url = `http://127.0.0.1:${port}`;

  // Ready: poll with backoff until 200; fail at once (with its logs) if the container exits.
  let delay = 50;
  for (;;) {
    const answer = await fetch(`${base_url}/healthz/ready`).catch(() => undefined);
    if (answer?.status === 200) break;
    const state = (await podman.ok(['inspect', '--format', '{{.State.Status}}', id])).trim();
    if (state !== 'running' || Date.now() - at > 90_000) {
      const logs = await podman.run(['logs', id]);
      t.fail(`not ready (${state}, ${Date.now() - at} ms): ${logs.stdout}${logs.stderr}`);
      return;
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 400);
  }
  const readyMs = Date.now() - at;

  const post = async (walker: string, body: unknown): Promise<{ status: number; json: { ok: boolean; data: { reports: unknown[] } } }> => {
    const r = await fetch(`${base_url}/walker/${walker}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as { ok: boolean; data: { reports: unknown[] } } };
  };
  const echo = await post('Echo', { text: 'hello from a container' });
  t.equal(echo.status, 200, 'POST /walker/Echo answers 200');
  t.same(echo.json.data.reports, [{ echo: 'hello from a container' }], 'with its report');
  t.equal((await post('AddNote', { text: 'kept in /app/.svc' })).status, 200, 'a walker writes a node (SQLite in the writable data folder)');
  t.same((await post('ListNotes', {})).json.data.reports, ['kept in /app/.svc'], 'and another reads it back');

  const probe = "const fs = require('fs'); console.log(JSON.stringify({ uid: process.getuid(), env: fs.existsSync('/app/.env'), cwd: process.cwd(), pid1: fs.readFileSync('/proc/1/cmdline', 'utf8').split('\\0')[0], tomlSecret: fs.readFileSync('/app/svc.toml', 'utf8').includes('a-secret-of-the-file') }))";
  const inside = JSON.parse(await podman.ok(['exec', id, 'node', '-e', probe])) as Record<string, unknown>;
  t.same(inside, { uid: 1000, env: false, cwd: '/app', pid1: 'node', tomlSecret: false }, "user 1000, no .env in the image, node is PID 1, svc.toml's credential left out");

  at = Date.now();
  await podman.ok(['stop', '--time', '30', id], { timeoutMs: 60_000 });
  const stopMs = Date.now() - at;
  t.equal((await podman.ok(['inspect', '--format', '{{.State.ExitCode}}', id])).trim(), '0', 'SIGTERM: it drains and exits 0');
  const logs = await podman.run(['logs', id]);
  const output = logs.stdout + logs.stderr;
  t.match(output, /svc: SIGTERM: draining/, 'the drain is logged');
  t.match(output, /svc: stopped/, 'and its end');
  t.notMatch(output, /never-in-the-image/, "the .env's secret is nowhere in its output");

  const figures = [`image ${(size / 1e6).toFixed(0)} MB (${size} bytes)`, `base image ${baseMs} ms`, `svc start --scale --build --no-push (staged, podman build) ${buildMs} ms`];
  figures.push(`run to /healthz/ready ${readyMs} ms`, `SIGTERM to exit ${stopMs} ms`, `test ${Date.now() - began} ms`);
  t.comment(figures.join('; '));
});
