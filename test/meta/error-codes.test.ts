import t from 'tap';
import { readFileSync } from 'node:fs';
import { KERNEL_ERRORS } from 'svc/kernel';
import { GRAPH_ERRORS, ROOM_ERRORS } from '../../actors/walker/index.ts';
import { STORE_ERRORS } from '../../actors/graph/index.ts';
import { HTTP_ERRORS } from '../../transports/http/index.ts';
import { IDENTITY_ERRORS } from '../../actors/identity/index.ts';
import { RUNTIME_ERRORS } from '../../runtime/index.ts';
import { CLUSTER_ERRORS } from '../../cluster/index.ts';
import { KVSTORE_ERRORS, STORAGE_ERRORS } from '../../actors/data/index.ts';
import { GATEWAY_ERRORS, SV_ERRORS } from '../../transports/sv/index.ts';
import { SANDBOX_ERRORS } from '../../actors/sandbox/index.ts';
import { PROXY_CONFIG_CODE, PROXY_ERRORS } from '../../transports/proxy/index.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** Rows of the catalogue: code → status. */
function documented(): Map<string, number> {
  const rows = new Map<string, number>();
  for (const m of doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)) rows.set(m[1] as string, Number(m[2]));
  return rows;
}

t.test('every kernel error code is documented with its status', async (t) => {
  const rows = documented();
  for (const [code, { status }] of Object.entries({ ...KERNEL_ERRORS, ...GRAPH_ERRORS, ...STORE_ERRORS, ...HTTP_ERRORS, ...IDENTITY_ERRORS, ...RUNTIME_ERRORS, ...CLUSTER_ERRORS, ...STORAGE_ERRORS, ...KVSTORE_ERRORS, ...SV_ERRORS, ...SANDBOX_ERRORS, ...PROXY_ERRORS, ...ROOM_ERRORS })) {
    t.equal(rows.get(code), status, `${code} documented as ${status}`);
  }
  t.match(doc, `| \`${PROXY_CONFIG_CODE}\` | 1 |`, 'the proxy\'s start error is documented');
});

t.test('service-to-service codes are wire codes of their own; the gateway start errors are named', async (t) => {
  for (const code of Object.keys(SV_ERRORS)) {
    t.match(code, /^[A-Z][A-Z_]+$/);
    t.notOk(code in HTTP_ERRORS || code in IDENTITY_ERRORS, `${code} is defined once`);
  }
  for (const code of Object.keys(GATEWAY_ERRORS)) t.match(doc, `\`${code}\``, `${code} is in docs/errors.md`);
});

t.test('wire codes are upper snake case and never collide with SVC_ERR_ codes', async (t) => {
  for (const code of Object.keys({ ...HTTP_ERRORS, ...IDENTITY_ERRORS, ...ROOM_ERRORS })) {
    t.match(code, /^[A-Z][A-Z_]+$/);
    t.notMatch(code, /^SVC_ERR_/);
  }
  for (const code of Object.keys(ROOM_ERRORS)) t.notOk(code in HTTP_ERRORS || code in IDENTITY_ERRORS, `${code} is defined once`);
});

t.test('app data codes are wire codes; one shared with the front keeps its status', async (t) => {
  for (const [code, { status }] of Object.entries({ ...STORAGE_ERRORS, ...KVSTORE_ERRORS })) {
    t.match(code, /^[A-Z][A-Z_]+$/);
    t.notMatch(code, /^SVC_ERR_/);
    t.notOk(code in IDENTITY_ERRORS, `${code} is not an identity code`);
    if (code in HTTP_ERRORS) t.equal(HTTP_ERRORS[code as keyof typeof HTTP_ERRORS].status, status, `${code}: the same status as on the wire`);
  }
});

t.test('identity codes do not redefine wire codes', async (t) => {
  for (const code of Object.keys(IDENTITY_ERRORS)) t.notOk(code in HTTP_ERRORS, `${code} is defined once`);
});

t.test('codes follow the SVC_ERR_ convention', async (t) => {
  for (const code of Object.keys({ ...KERNEL_ERRORS, ...GRAPH_ERRORS, ...STORE_ERRORS, ...RUNTIME_ERRORS, ...CLUSTER_ERRORS })) t.match(code, /^SVC_ERR_[A-Z_]+$/);
  const seen = new Set<string>();
  for (const catalogue of [KERNEL_ERRORS, GRAPH_ERRORS, STORE_ERRORS, RUNTIME_ERRORS, CLUSTER_ERRORS]) {
    for (const code of Object.keys(catalogue)) {
      t.notOk(seen.has(code), `${code} is defined once`);
      seen.add(code);
    }
  }
});

t.test('the deploy errors (a CLI exit, not a wire status) are in docs/errors.md', async (t) => {
  const { DeployConfigError, ManifestError } = await import('../../deploy/index.ts');
  for (const code of [new DeployConfigError(['x']).code, new ManifestError([]).code]) t.match(doc, `| \`${code}\` | 2 |`, `${code} is in docs/errors.md`);
});

t.test('the cluster errors of a deploy (a CLI exit 1) are in docs/errors.md', async (t) => {
  const { CLUSTER_ERRORS } = await import('../../deploy/index.ts');
  for (const code of Object.keys(CLUSTER_ERRORS)) t.match(doc, `| \`${code}\` | 1 |`, `${code} is in docs/errors.md`);
});
