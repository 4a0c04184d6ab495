// The project the `svc start --scale` CLI tests act on (test/cli/scale-apply.test.ts, scale-destroy.test.ts): the deploy
// fixture app in a temporary folder, its svc.toml naming the FAKE Kubernetes API server of the test kit (no real one
// runs here) and a stand-in for the ingress node port, and `svc` run in it with stdin given.
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, startFakeKubeApi, standInIngress, type FakeKubeApi, type StandInIngress } from '../kit/index.ts';

export const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;

export interface Project {
  api: FakeKubeApi;
  ingress: StandInIngress;
  entry: string;
  env: Record<string, string>;
  configure(extra?: string, image?: string): void;
  svc(args: string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export async function project(t: Test, options: Parameters<typeof startFakeKubeApi>[0] = {}): Promise<Project> {
  const api = await startFakeKubeApi(options);
  t.teardown(() => api.close());
  const ingress = await standInIngress();
  t.teardown(() => ingress.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-apply-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(fixture('deploy/app.ts'), join(dir, 'app.ts'));
  const configure = (extra = '', image = 'registry.example.com/shop:v1') =>
    writeFileSync(join(dir, 'svc.toml'), `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\nimage = "${image}"\ningress_node_port = ${ingress.port}\nprogress_deadline_seconds = 2\n${extra}\n`);
  configure();
  const env = { KUBECONFIG: api.kubeconfig, HOME: dir };
  const svc = (args: string[], stdin?: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, ...env, SVC_ACCESS_LOG: 'false' } });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d));
      p.stderr.on('data', (d: Buffer) => (stderr += d));
      p.on('exit', (code) => resolve({ code, stdout, stderr }));
      if (stdin === undefined) p.stdin.end();
      else p.stdin.end(stdin);
    });
  return { api, ingress, entry: join(dir, 'app.ts'), env, configure, svc };
}

