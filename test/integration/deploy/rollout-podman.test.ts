// `svc start app.ts --scale` end to end, for real where podman runs, against the FAKE Kubernetes API server of the test
// kit (no real API server runs here): the app's image built by the CLI (`--build --no-push`), deployed by the CLI; the
// fake's pods run by the kit's pod runner — the app's pod as a real container of that image (its command, its env
// from the Secrets, its readiness probe, its preStop hook), a real PostgreSQL and a real Redis standing for the
// database pods at their Services' addresses — and reached through a stand-in of the ingress node port that proxies to
// the ready pods as it heard of them 2 s ago (as Traefik hears of endpoint changes late). Then a rolling update to a
// new image while requests keep coming and a WebSocket client stays connected: no request fails, the client is closed
// by the old pod's drain and reconnects to the new one, the old container drains on SIGTERM, and a note written before
// is read back by the new pod. Skipped — loudly — where podman, PostgreSQL or Redis cannot run.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WalkerSocket } from 'svc/client';
import { SVC_ROOT } from '../../../deploy/image/index.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { Podman, podmanAvailable, podRunner, post, runSvc, skipPostgres, skipRedis, startFakeKubeApi, type FakeKubeApi, type PodRunner } from '../../kit/index.ts';

// Two image builds and two rollouts of real containers: on a loaded CI machine (two test files at a time) this file may need more than the 240 s tap gives a file.
t.setTimeout(300_000);

/** The app; version 2 reports one more field from Echo and Live. */
function app(version: 1 | 2): string {
  const extra = version === 1 ? '' : ', version: 2';
  return `import { APIProtocol, entry, Node, restspec, Root, T, Walker } from 'svc';

export class Note extends Node {
  static has = T.Object({ text: T.String() });
  declare text: string;
}

export class Echo extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ message: T.String({ default: 'hello' }) });
  declare message: string;
  @entry(Root) run() {
    this.report({ echo: this.message${extra} });
  }
}

export class AddNote extends Walker {
  static has = T.Object({ text: T.String() });
  declare text: string;
  @entry(Root) async run(here: Root) {
    this.report(await here.connect(new Note({ text: this.text })));
  }
}

export class ListNotes extends Walker {
  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Note));
  }
  @entry(Note) each(here: Note) {
    this.report(here.text);
  }
}

export class Live extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({ msg: T.String() });
  declare msg: string;
  @entry(Root) run() {
    this.report({ live: this.msg${extra} });
  }
}
`;
}

/**
 * Remove the test's images and the intermediate layers of their builds that nothing else uses — never a base image,
 * nor a layer another image still uses or names (as test/integration/deploy/image-podman.test.ts does, in three podman
 * calls rather than two per layer).
 */
async function removeImages(podman: Podman, refs: string[]): Promise<void> {
  if (!refs.length) return;
  const history = await podman.run(['history', '--format', '{{.ID}}', ...refs.slice(0, 1)]);
  const more = await Promise.all(refs.slice(1).map((ref) => podman.run(['history', '--format', '{{.ID}}', ref])));
  const layers = [
    ...new Set(
      [history, ...more].flatMap((h) =>
        h.stdout
          .split('\n')
          .map((id) => id.trim())
          .filter((id) => /^[0-9a-f]{12,}$/.test(id)),
      ),
    ),
  ];
  await podman.run(['rmi', '-f', ...refs]);
  const tags = await podman.run(['image', 'inspect', '--format', '{{.Id}} {{len .RepoTags}}', ...layers]);
  // Newest first (history's order): a layer goes before its parent; a tagged one (a base) or one with children stays.
  const untagged = new Set(
    tags.stdout
      .split('\n')
      .filter((l) => / 0$/.test(l))
      .map((l) => l.slice(0, 12)),
  );
  const doomed = layers.filter((id) => untagged.has(id.slice(0, 12)));
  if (doomed.length) await podman.run(['rmi', ...doomed]);
}

type Reply = { status: number; body: { ok?: boolean; data?: { reports?: unknown[] } } };

const why = (await podmanAvailable()) || skipPostgres || skipRedis || undefined;
if (why) t.comment(`SKIPPED: the app is not deployed for real to the fake Kubernetes API server on this machine: ${why}`);

t.test('end to end on the fake Kubernetes API server with real containers: deployed, a write kept, rolled to v2 failing no request', { skip: why ?? false, timeout: 280_000 }, async (t) => {
  const began = Date.now();
  const podman = await Podman.open();
  // The local base with a shell and `sleep`: the app pod's preStop hook `/bin/sh -c 'sleep 5'` runs as on the default
  // Debian-based base image (the bare local base has no shell: there the hook fails and SIGTERM comes at once).
  const base = await podman.ensureNodeShellImage();
  const run = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`;
  const name = `roll-${run}`;
  const namespace = `roll-${run}`;

  // One teardown, in order: the cluster (its pods stopped), the runner's leftovers, the images, the project.
  let api: FakeKubeApi | undefined;
  let pods: PodRunner | undefined;
  const images: string[] = [];
  let building: Promise<{ ref: string; ms: number }> | undefined;
  const project = mkdtempSync(join(tmpdir(), 'svc-rollout-app-'));
  // What happened when, printed if the test does not reach its end (a timeout on a loaded machine says where it was).
  const marks: string[] = [];
  const mark = (what: string): void => void marks.push(`${Date.now() - began} ms: ${what}`);
  let finished = false;
  t.teardown(async () => {
    if (!finished) {
      const state = pods?.containers.map(
        (c) => `${c.pod} ${c.image} started +${c.startedAt - began} ready ${c.readyAt ? `+${c.readyAt - began}` : 'never'}${c.deletedAt ? ` deleted +${c.deletedAt - began}` : ''}`,
      );
      process.stderr.write(`rollout-podman: unfinished:\n  ${[...marks, ...(state ?? [])].join('\n  ')}\n`);
    }
    await building?.catch(() => undefined);
    await api?.close().catch(() => undefined);
    await pods?.close().catch(() => undefined);
    await removeImages(podman, images).catch(() => undefined);
    rmSync(project, { recursive: true, force: true });
  });

  pods = podRunner(podman);
  api = await startFakeKubeApi({ runner: pods.runner });
  pods.attach(api);
  // Traefik applies what its providers tell it at most every 2 s (providersThrottleDuration): the stand-in routes by
  // endpoints 2 s old, so a pod being deleted still gets requests for a while — the preStop pause is what covers that.
  const ingress = await pods.ingress(namespace, name, 2000);
  const url = ingress.url;

  // The project as the user has it before (v1) and after (v2) changing its code: two folders of the same files but
  // app.ts, so v2 builds beside v1's deploy (the image's tag is of the content, not of the folder).
  const dirs = { 1: join(project, 'v1'), 2: join(project, 'v2') } as const;
  for (const version of [1, 2] as const) {
    const dir = dirs[version];
    mkdirSync(dir);
    writeFileSync(join(dir, 'app.ts'), app(version));
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'rollout-fixture', version: '1.0.0', type: 'module', dependencies: { svc: `file:${SVC_ROOT}` } }, null, 2)}\n`);
    writeFileSync(
      join(dir, 'svc.toml'),
      [
        '[scale.orchestrator]',
        `app_name = "${name}"`,
        `namespace = "${namespace}"`,
        `base_image = "${base}"`,
        'image_deps = "host"',
        `container_cli = "${podman.wrapper()}"`,
        'registry = "localhost"',
        `ingress_node_port = ${ingress.port}`,
        'min_replicas = 1',
        // Probes at the pace of a test: the pod runner honours the delay and the period.
        'readiness_initial_delay = 0',
        'readiness_period = 1',
        '',
      ].join('\n'),
    );
  }
  const svc = (version: 1 | 2, args: string[]) => runSvc(args, { clean: true, cwd: dirs[version], env: { KUBECONFIG: api!.kubeconfig, HOME: project } });
  const build = async (version: 1 | 2): Promise<{ ref: string; ms: number }> => {
    const at = Date.now();
    const built = await svc(version, ['start', join(dirs[version], 'app.ts'), '--scale', '--build', '--no-push']);
    const ref = /^Image built: (\S+)$/m.exec(built.stdout)?.[1] ?? '';
    if (ref) images.push(ref);
    t.equal(built.code, 0, 'svc start --scale --build --no-push', { stderr: built.stderr.slice(-3000) });
    return { ref, ms: Date.now() - at };
  };
  const deploy = async (version: 1 | 2): Promise<{ ms: number; stdout: string; stderr: string; code: number | null }> => {
    const at = Date.now();
    const r = await svc(version, ['start', join(dirs[version], 'app.ts'), '--scale']);
    return { ...r, ms: Date.now() - at };
  };
  const walker = async (walkerName: string, body: unknown, token?: string): Promise<Reply> => (await post(`${url}/walker/${walkerName}`, body, token ? bearer(token) : {})) as Reply;
  const appImage = () => (api!.get('apps/v1', 'Deployment', namespace, name) as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec.containers[0]?.image;

  // 1. Image v1, built by the CLI; deployed by the CLI (the same content tag, without --build).
  mark('cluster and ingress up');
  const v1 = await build(1);
  mark(`v1 built (${v1.ms} ms)`);
  t.match(v1.ref, new RegExp(`^localhost/${name}:[0-9a-f]{12}$`), 'v1: the content-tagged image');
  if (!v1.ref) return;
  // v2 builds meanwhile (its layers of svc come from v1's build cache).
  building = build(2).then((b) => (mark(`v2 built (${b.ms} ms)`), b));
  const first = await deploy(1);
  mark(`v1 deployed (${first.ms} ms, exit ${first.code})`);
  t.equal(first.code, 0, 'svc start --scale: deployed', { stderr: first.stderr.slice(-3000) });
  t.match(first.stdout, `Deployment complete: http://127.0.0.1:${ingress.port}/\n`, 'the URL of the ingress node port');
  if (first.code !== 0) {
    for (const c of pods.containers) t.comment(`${c.pod}: ${(await podman.run(['logs', c.id])).stderr.slice(-2000)}`);
    await building;
    return;
  }
  t.equal(appImage(), v1.ref, 'the Deployment runs the image built');
  t.equal(pods.containers.length, 1, 'one app container runs');
  t.same(pods.standIns.map((s) => s.kind).sort(), ['postgres', 'redis'], 'a real PostgreSQL and a real Redis stand for the database pods');
  const firstRollout = /rollout (\d+) ms/.exec(first.stderr)?.[1];

  // 2. Through the ingress: readiness, the public walker, a user's write.
  const readiness = await fetch(`${url}/healthz/ready`);
  t.equal(readiness.status, 200, 'readiness passes through the ingress');
  const echo = await walker('Echo', { message: 'one' });
  t.equal(echo.status, 200, 'the public Echo answers');
  t.same(echo.body.data?.reports, [{ echo: 'one' }], 'from v1');
  await register(url, 'walker-user');
  const token = await tokenOf(url, 'walker-user');
  const note = `a note of ${run}`;
  t.equal((await walker('AddNote', { text: note }, token)).status, 200, 'the private AddNote writes');
  t.same((await walker('ListNotes', {}, token)).body.data?.reports, [note], 'and it is read back');
  const docdb = pods.standIns.find((s) => s.kind === 'postgres');
  const inPostgres = async (): Promise<number> => {
    const pg = docdb!.postgres!;
    const at = `postgres://postgres@127.0.0.1:${pg.port}/${docdb!.database}`;
    const tables = await pg.query(
      "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS t FROM information_schema.tables " +
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'",
      [],
      at,
    );
    let found = 0;
    for (const row of tables.rows as { t: string }[]) found += Number((await pg.query(`SELECT count(*) AS n FROM ${row.t} x WHERE x::text LIKE $1`, [`%${note}%`], at)).rows[0].n);
    return found;
  };
  t.ok((await inPostgres()) > 0, 'the note is in the real PostgreSQL (the database of {app}-docdb-secret)');

  // 3. Image v2; a rolling update to it while requests keep coming and a WebSocket client stays connected.
  const v2 = await building;
  t.not(v2.ref, v1.ref, 'v2: a new content tag');
  if (!v2.ref) return;
  const socket = await WalkerSocket.connect(url, 'Live');
  t.same((await socket.send({ msg: 'before' })).reports, [{ live: 'before' }], 'a WebSocket client is served by v1');
  const closedAt = socket.closed.then((c) => ({ ...c, at: Date.now() }));
  let rolling = true;
  const results: { ok: boolean; version: number; why?: string }[] = [];
  const load = async (n: number): Promise<void> => {
    for (let i = 0; rolling; i++) {
      try {
        const r = await walker('Echo', { message: `${n}-${i}` });
        const report = r.body.data?.reports?.[0] as { echo?: string; version?: number } | undefined;
        const ok = r.status === 200 && report?.echo === `${n}-${i}`;
        results.push({ ok, version: report?.version ?? 1, ...(ok ? {} : { why: `${r.status} ${JSON.stringify(r.body).slice(0, 200)}` }) });
      } catch (error) {
        results.push({ ok: false, version: 0, why: (error as Error).message });
      }
      // A steady stream, not a flood: the machine also runs the deploy, the containers and the databases.
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const loaders = [1, 2].map(load);
  const rollStart = Date.now();
  mark('rolling to v2');
  const second = await deploy(2);
  mark(`v2 deployed (${second.ms} ms, exit ${second.code}): ${second.stderr.replace(/\n/g, ' | ').slice(-1500)}`);
  t.equal(second.code, 0, 'svc start --scale: rolled out', { stderr: second.stderr.slice(-3000) });
  t.match(second.stdout, `Deployment complete: http://127.0.0.1:${ingress.port}/\n`, 'complete again');
  t.equal(appImage(), v2.ref, 'the Deployment runs v2');
  const old = pods.containers[0]!;
  // The roll ends when the old pod is gone: its drain is part of it.
  await api.until(() => old.stopped, 60_000, 'the old container to stop');
  mark('old container stopped');
  const rollMs = Date.now() - rollStart;
  rolling = false;
  await Promise.all(loaders);
  const closed = await Promise.race([closedAt, new Promise<undefined>((r) => setTimeout(r, 5000, undefined))]);
  t.ok(closed, 'the WebSocket client was closed by the old pod');
  t.equal(closed?.code, 4503, 'with 4503 (svc draining)');
  const reconnectAt = Date.now();
  const again = await WalkerSocket.connect(url, 'Live');
  t.same((await again.send({ msg: 'after' })).reports, [{ live: 'after', version: 2 }], 'it reconnects, to v2');
  const reconnectMs = Date.now() - reconnectAt;
  await again.close();

  const failed = results.filter((r) => !r.ok);
  t.ok(results.length > 0, `${results.length} requests sent during the roll`);
  t.equal(failed.length, 0, `no request failed during the roll${failed.length ? `: ${JSON.stringify(failed.slice(0, 5))}` : ''}`);
  t.ok(results.some((r) => r.version === 1) && results.some((r) => r.version === 2), 'answered by v1, then by v2');
  const lastVersions = results.slice(-9).map((r) => r.version);
  t.same(
    lastVersions,
    lastVersions.map(() => 2),
    'the last answers come from v2',
  );
  t.same(
    ingress.refused.filter((r) => r.at >= rollStart),
    [],
    'during the roll the ingress refused nothing and no pod failed to answer',
  );
  t.match(old.stopped?.preStop, /^exec .*: done$/, 'the preStop pause ran before SIGTERM');
  t.equal(old.stopped?.exitCode, 0, 'the old container drained on SIGTERM and exited 0');
  t.match(old.stopped?.logs ?? '', /SIGTERM: leaving the cluster, draining/, 'its drain is in its log', { tail: old.stopped?.logs.slice(-1500) });
  const live = pods.containers.filter((c) => !c.stopped);
  t.equal(live.length, 1, 'one app container runs');
  t.equal(live[0]?.image, v2.ref, 'of v2');
  t.same((await walker('Echo', { message: 'two' })).body.data?.reports, [{ echo: 'two', version: 2 }], 'Echo answers from v2');
  t.same((await walker('ListNotes', {}, token)).body.data?.reports, [note], 'the new pod reads the note written before (PostgreSQL, not the pod)');
  const rollout = /rollout (\d+) ms/.exec(second.stderr)?.[1];

  finished = true;
  t.comment(
    [
      `build v1 ${v1.ms} ms, v2 ${v2.ms} ms`,
      `first deploy (svc start --scale to Deployment complete, v2 building beside it) ${first.ms} ms (rollout ${firstRollout} ms)`,
      `update deploy ${second.ms} ms (rollout ${rollout} ms); roll to the old pod gone ${rollMs} ms`,
      `old pod: preStop ${old.stopped?.preStop}; stopped in ${old.stopped?.ms} ms, exit ${old.stopped?.exitCode}`,
      `requests during the roll ${results.length} (2 concurrent, 10 ms apart), failed ${failed.length}; by pod ${JSON.stringify(Object.fromEntries(ingress.served))}`,
      `WebSocket closed ${closed ? `${closed.code} ${closed.at - rollStart} ms into the roll` : 'never'}, reconnected in ${reconnectMs} ms`,
      `test ${Date.now() - began} ms`,
    ].join('; '),
  );
});
