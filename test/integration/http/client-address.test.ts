// Per-address limits behind a reverse proxy: Forwarded / X-Forwarded-For are believed
// from trusted_proxies only (issue 9, "also decide").
import t from 'tap';
import { addressKey } from '../../../actors/identity/index.ts';
import { ClientAddresses } from '../../../transports/http/index.ts';
import { connect } from 'node:net';
import { login, register } from '../../helpers/identity.ts';
import { post, startServer } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;

t.test('the client behind trusted proxies, read from the right', async (t) => {
  const none = new ClientAddresses([]);
  t.equal(none.of('10.0.0.5', { 'x-forwarded-for': '1.2.3.4' }), '10.0.0.5', 'no trusted proxies: the peer, headers ignored');
  const a = new ClientAddresses(['10.0.0.0/8', '::1', 'fd00::/8']);
  t.equal(a.of('::ffff:10.0.0.5', { 'x-forwarded-for': '1.2.3.4' }), '1.2.3.4', 'a trusted peer (IPv4-mapped too)');
  t.equal(a.of('10.0.0.5', { 'x-forwarded-for': '6.6.6.6, 1.2.3.4, 10.1.1.1' }), '1.2.3.4', 'trusted hops skipped; a spoofed left-most entry is not believed');
  t.equal(a.of('9.9.9.9', { 'x-forwarded-for': '1.2.3.4' }), '9.9.9.9', 'an untrusted peer: its header is ignored');
  t.equal(a.of('10.0.0.5', { forwarded: 'for=1.1.1.1', 'x-forwarded-for': '203.0.113.7' }), '203.0.113.7', 'a Forwarded header the client sent is not believed (the proxy sets X-Forwarded-For)');
  const f = new ClientAddresses(['::1'], 'forwarded');
  t.equal(f.of('::1', { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"' }), '2001:db8:cafe::17', 'Forwarded (RFC 7239) when the proxies set that');
  t.equal(f.of('::1', { 'x-forwarded-for': '6.6.6.6' }), '::1', 'then X-Forwarded-For is not believed');
  t.equal(a.of('0000:0000:0000:0000:0000:ffff:0a00:0005', { 'x-forwarded-for': '1.2.3.4' }), '1.2.3.4', 'the long IPv6 form uWS writes');
  t.equal(addressKey('2001:db8:cafe:1:2:3:4:5'), addressKey('2001:db8:cafe:1:ffff::9'), 'limits count an IPv6 client per /64');
  t.not(addressKey('2001:db8:cafe:1::1'), addressKey('2001:db8:cafe:2::1'));
  t.equal(addressKey('1.2.3.4'), '1.2.3.4');
  t.equal(a.of('10.0.0.5', { 'x-forwarded-for': 'unknown' }), '10.0.0.5', 'no usable address: the proxy');
  t.equal(a.of('10.0.0.5', {}), '10.0.0.5', 'no header: the proxy');
  t.throws(() => new ClientAddresses(['10.0.0.0/33']), /trusted_proxies: "10.0.0.0\/33" is not an IP address or CIDR/);
  t.throws(() => new ClientAddresses(['proxy.local']));
});

t.test('login limits per address count the forwarded client when the proxy is trusted', async (t) => {
  const limits = { SVC_LOGIN_ATTEMPTS_PER_ADDRESS: '2', SVC_LOGIN_ATTEMPTS_PER_IDENTITY: '100' };
  const behind = await startServer({ entry, env: { ...limits, SVC_TRUSTED_PROXIES: '127.0.0.1/32' } });
  t.teardown(() => behind.stop());
  await register(behind.url, 'proxied_p');
  const from = (ip: string) =>
    post(`${behind.url}/user/login`, { identity: { type: 'username', value: 'proxied_p' }, credential: { type: 'password', password: 'a wrong password' } }, { 'x-forwarded-for': ip });
  t.same([(await from('1.1.1.1')).status, (await from('1.1.1.1')).status, (await from('1.1.1.1')).status], [401, 401, 429], 'one client: limited');
  t.equal((await from('2.2.2.2')).status, 401, 'another client behind the same proxy is not');
  // A client's own X-Forwarded-For line, then the proxy's appended one: the proxy's is counted.
  const twoLines = (): Promise<number> =>
    new Promise((resolve) => {
      const body = JSON.stringify({ identity: { type: 'username', value: 'proxied_p' }, credential: { type: 'password', password: 'a wrong password' } });
      const socket = connect(behind.port, '127.0.0.1', () =>
        socket.write(
          `POST /user/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Forwarded-For: 2.2.2.2\r\nX-Forwarded-For: 3.3.3.3\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      );
      socket.once('data', (d) => {
        resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(d.toString())?.[1]));
        socket.destroy();
      });
    });
  t.same([await twoLines(), await twoLines(), await twoLines()], [401, 401, 429], 'two header lines: the last (the proxy’s) names the client, 3.3.3.3');

  const direct = await startServer({ entry, env: limits });
  t.teardown(() => direct.stop());
  await register(direct.url, 'direct_d');
  const spoof = (ip: string) =>
    post(`${direct.url}/user/login`, { identity: { type: 'username', value: 'direct_d' }, credential: { type: 'password', password: 'a wrong password' } }, { 'x-forwarded-for': ip });
  t.same([(await spoof('1.1.1.1')).status, (await spoof('2.2.2.2')).status, (await spoof('3.3.3.3')).status], [401, 401, 429], 'without trusted proxies a forged header changes nothing');
  t.equal((await login(direct.url, 'direct_d')).status, 429, 'the address is limited whatever it claims');
});

t.test('a bad trusted_proxies entry stops the start with one line', async (t) => {
  await t.rejects(startServer({ entry, env: { SVC_TRUSTED_PROXIES: '10.0.0.0/8, not-an-ip' } }), /svc: \[scale.server\] trusted_proxies: "not-an-ip" is not an IP address or CIDR/);
});
