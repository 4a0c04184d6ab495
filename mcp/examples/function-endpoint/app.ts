// Function endpoints: plain request/response handlers declared with fn().
//
//   POST /function/add          {"a": 1, "b": 2}   public, pure: data.result = 3
//   POST /function/remember     {"key": "k", "value": "v"}   private: stores on the caller's graph
//   POST /function/recall       {"key": "k"}       private: reads it back (404 when missing)
//   GET  /version.txt                               public, raw text body (no envelope)
import { fn, HTTPMethod, Node, SvcError, T } from 'svc';

/** A key/value pair kept on the caller's graph. */
export class Memo extends Node {
  static has = T.Object({ key: T.String({ minLength: 1, maxLength: 100 }), value: T.String({ maxLength: 1000 }) });
  declare key: string;
  declare value: string;
}

export const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);

export const remember = fn(
  { params: T.Object({ key: T.String({ minLength: 1, maxLength: 100 }), value: T.String({ maxLength: 1000 }) }) },
  async ({ key, value }, ctx) => {
    const [memo] = await ctx.root.out(Memo, { key });
    if (memo) memo.value = value;
    else await ctx.root.connect(new Memo({ key, value }));
    ctx.log.info({ key }, 'remembered');
    return { key, value };
  },
);

export const recall = fn({ params: T.Object({ key: T.String() }) }, async ({ key }, ctx) => {
  const [memo] = await ctx.root.out(Memo, { key });
  if (!memo) throw new SvcError('MEMO_NOT_FOUND', `nothing remembered under ${key}`, { status: 404 });
  return memo.value;
});

export const versionText = fn(
  { access: 'pub', method: HTTPMethod.GET, path: '/version.txt', envelope: false, produces: 'text/plain' },
  () => '1.0.0\n',
);
