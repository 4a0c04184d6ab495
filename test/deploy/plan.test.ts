// The plan's YAML (deploy/plan.ts): what kubectl reads back is what was built — YAML 1.1 rules, so strings such as
// `no`, `on`, `y` or `1_000` stay strings — and Secret values are redacted unless asked for.
import t from 'tap';
import { parse } from 'yaml';
import { REDACTED, renderYaml } from '../../deploy/index.ts';

t.test('strings YAML 1.1 would read as booleans or numbers are quoted', async (t) => {
  const tricky = ['no', 'on', 'y', 'Yes', 'OFF', '1_000', '0b101', '8000', 'true', '1e3', '~', 'null'];
  const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'y' }, data: Object.fromEntries(tricky.map((v, i) => [`k${i}`, v])) };
  const text = renderYaml([object], { showSecrets: false });
  for (const v of tricky) t.notMatch(text, new RegExp(`: ${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`), `${v} is quoted`);
  t.same(parse(text.replace(/^---\n/, ''), { version: '1.1' }), object, 'a YAML 1.1 reader (kubectl) reads back the object');
  t.same(parse(text.replace(/^---\n/, '')), object, 'and a YAML 1.2 reader too');
});

t.test('Secret values are redacted unless --show-secrets', async (t) => {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, type: 'Opaque', stringData: { password: 'p4ss-w0rd-value' } };
  t.notMatch(renderYaml([secret], { showSecrets: false }), 'p4ss-w0rd-value');
  t.match(renderYaml([secret], { showSecrets: false }), `password: ${REDACTED}`);
  t.match(renderYaml([secret], { showSecrets: true }), 'password: p4ss-w0rd-value');
  t.equal(secret.stringData.password, 'p4ss-w0rd-value', 'the objects themselves are not changed');
});
