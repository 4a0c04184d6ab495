// The progress line of long `svc db` runs: rewritten in place on a terminal, plain lines otherwise.
import t from 'tap';
import { Progress } from '../../cli/progress.ts';

function sink(tty: boolean) {
  const out: string[] = [];
  return { out, stream: { isTTY: tty, columns: 200, write: (s: string) => out.push(s) } };
}

t.test('a terminal: one line rewritten with \\r, at most every redraw interval, kept at the end', async (t) => {
  let now = 0;
  const { out, stream } = sink(true);
  const p = new Progress('copy documents', 1000, { stream, now: () => now });
  p.add(10);
  t.same(out, [], 'not redrawn before the interval');
  now = 150;
  p.add(490);
  t.equal(out.length, 1);
  t.match(out[0], /^\rcopy documents \[#{12}-{12}\]  50% 500\/1,000 \d/);
  now = 400;
  p.add(500);
  p.done();
  t.match(out.at(-2), /100% 1,000\/1,000/);
  t.equal(out.at(-1), '\n', 'the last line stays');
  t.equal(p.current, 1000);
});

t.test('not a terminal: a plain line now and then; a short run says nothing', async (t) => {
  let now = 0;
  const quiet = sink(false);
  const short = new Progress('inspect documents', 10, { stream: quiet.stream, now: () => now });
  short.add(10);
  short.done();
  t.same(quiet.out, []);

  const { out, stream } = sink(false);
  const p = new Progress('copy users', undefined, { stream, now: () => now, plainEveryMs: 1000 });
  now = 1500;
  p.add(300);
  now = 1700;
  p.add(100);
  t.same(out, ['svc: copy users: 300 200/s\n']);
  now = 3000;
  p.done();
  t.same(out.at(-1), 'svc: copy users: 400 done in 3.0 s\n');
});
