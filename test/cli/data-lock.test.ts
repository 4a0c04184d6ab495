// The serving lock holds for the life of the process, garbage collections included.
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { lockDataFolder } from '../../runtime/main/data-lock.ts';

/** Try to take the lock from another process: whether it could. */
function otherProcessGets(path: string): Promise<boolean> {
  const script = `import { lockDataFolder } from ${JSON.stringify(new URL('../../runtime/main/data-lock.ts', import.meta.url).pathname)};
try { lockDataFolder(${JSON.stringify(path)}); process.stdout.write('got'); } catch (e) { process.stdout.write(e.constructor.name); }`;
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.on('exit', () => resolve(out === 'got'));
  });
}

t.test('held across garbage collections until released', async (t) => {
  const path = join(t.testdir({}), 'anchor_store.db');
  lockDataFolder(path); // the return value dropped on purpose, as a caller might
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) collect();
  t.equal(await otherProcessGets(path), false, 'another process cannot take it after GC');
});

t.test('released: another process takes it', async (t) => {
  const path = join(t.testdir({}), 'anchor_store.db');
  const lock = lockDataFolder(path);
  t.equal(await otherProcessGets(path), false);
  lock.release();
  t.equal(await otherProcessGets(path), true);
});
