// `svc scale destroy|rollback` (and the older `svc destroy`) as a user runs them, against the FAKE Kubernetes API
// server of the test kit (no real API server runs here): destroy's confirmation read from stdin (y, n, end of input,
// --yes), the refusals made before any request, and a manual rollback.
import t from 'tap';
import { join } from 'node:path';
import { runSvc } from '../kit/index.ts';
import { project } from './scale-project.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
// The cases share nothing (a project folder and a fake API server each): side by side, as each waits on `svc` runs.
t.jobs = 3;

t.test('fake Kubernetes API server: destroy asks y on stdin; n and end of input send nothing; y deletes and waits', async (t) => {
  const p = await project(t);
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  const before = p.api.writes().length;
  const no = await p.svc(['scale', 'destroy', 'app.ts'], 'n\n');
  t.equal(no.code, 1);
  t.match(no.stdout, /Namespace shop, and everything in it/);
  t.match(no.stdout, /PersistentVolumeClaim shop\/data-shop-docdb-0 .*the data in it is deleted/);
  t.match(no.stdout, /Not confirmed: nothing was deleted/);
  const eof = await p.svc(['destroy', 'app.ts'], '');
  t.equal(eof.code, 1, 'end of input is no');
  t.equal(p.api.writes().length, before, 'nothing was sent');
  const yes = await p.svc(['scale', 'destroy', 'app.ts'], 'y\n');
  t.equal(yes.code, 0, yes.stderr);
  t.match(yes.stdout, /Destroyed: shop and namespace shop/);
  t.notOk(p.api.get('v1', 'Namespace', undefined, 'shop'), 'gone when it says so');
  const again = await p.svc(['scale', 'destroy', 'app.ts', '--yes']);
  t.equal(again.code, 0);
  t.match(again.stdout, /nothing to delete/);
});

t.test('refusals before any request: --enable-tls without domain, --dry-run with --enable-tls, no cluster configured', async (t) => {
  const p = await project(t);
  const tls = await p.svc(['start', 'app.ts', '--scale', '--enable-tls']);
  t.equal(tls.code, 2, tls.stderr);
  t.match(tls.stderr, /\[scale\.orchestrator\] domain is not set/);
  t.match(tls.stderr, /cert_manager_email is not set/);
  const dry = await p.svc(['start', 'app.ts', '--scale', '--dry-run', '--enable-tls']);
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stderr, /--dry-run ignores --enable-tls/);
  t.same(p.api.requests, [], 'the fake API server got no request');
  const none = await runSvc(['start', p.entry, '--scale'], { env: { KUBECONFIG: '', HOME: join(p.entry, '..') } });
  t.equal(none.code, 1);
  t.match(none.stderr, /no cluster configured/);
});

t.test('fake Kubernetes API server: rollback by hand, to the previous revision and --to N', async (t) => {
  const p = await project(t);
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  p.configure('', 'registry.example.com/shop:v2');
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  const image = () => (p.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).spec.template.spec.containers[0].image;
  t.equal(image(), 'registry.example.com/shop:v2');
  const back = await p.svc(['scale', 'rollback', 'app.ts']);
  t.equal(back.code, 0, back.stderr);
  t.match(back.stdout, /Rolled back: shop from revision 2 to revision 1/);
  t.equal(image(), 'registry.example.com/shop:v1');
  const forward = await p.svc(['scale', 'rollback', 'app.ts', '--to', '2']);
  t.equal(forward.code, 0, forward.stderr);
  t.equal(image(), 'registry.example.com/shop:v2');
  const missing = await p.svc(['scale', 'rollback', 'app.ts', '--to', '9']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /revision 9 is not kept/);
});
