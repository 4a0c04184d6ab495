/**
 * Which PostgreSQL driver: `pg` (node-postgres) or `postgres` (porsager),
 * measured side by side on one throwaway server — the calls the store makes:
 * point reads by primary key (prepared), one-row inserts each in its own
 * transaction, and one function call carrying a JSON batch (the group commit).
 *
 *   node --import tsx bench/pg-driver.ts [--quick]
 */
import pg from 'pg';
import postgres from 'postgres';
import { startPostgres } from '../test/kit/index.ts';
import { machine, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const N = quick ? 2_000 : 10_000;
const CONC = 8;

async function timed(label: string, total: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONC }, async () => {
    while (next < total) await fn(next++);
  }));
  const ops = total / ((performance.now() - t0) / 1000);
  console.log(`${label.padEnd(40)} ${Math.round(ops).toString().padStart(8)} ops/s`);
  return ops;
}

const server = await startPostgres();
try {
  const url = await server.database('bench_driver');
  await server.query('CREATE TABLE docs (id text PRIMARY KEY, body jsonb NOT NULL)', [], url);
  await server.query(`CREATE FUNCTION put_many(b jsonb) RETURNS int LANGUAGE sql AS $$ INSERT INTO docs SELECT x->>'id', x->'body' FROM jsonb_array_elements(b) x ON CONFLICT (id) DO UPDATE SET body = excluded.body RETURNING 1 $$`, [], url);
  const body = JSON.stringify({ access: { anyone: -1, roots: {} }, context: { title: 'milk', done: false, n: 3 } });
  const results: Record<string, Record<string, number>> = { pg: {}, postgres: {} };

  const pool = new pg.Pool({ connectionString: url, max: CONC });
  pool.on('error', () => undefined);
  const sql = postgres(url, { max: CONC, prepare: true, onnotice: () => undefined });
  results.pg!.insert = await timed('pg: insert (own transaction)', N, (i) => pool.query({ name: 'ins', text: 'INSERT INTO docs VALUES ($1, $2)', values: [`a${i}`, body] }));
  results.postgres!.insert = await timed('postgres: insert (own transaction)', N, (i) => sql`INSERT INTO docs VALUES (${`b${i}`}, ${body}::jsonb)`);
  results.pg!.read = await timed('pg: point read', N, (i) => pool.query({ name: 'get', text: 'SELECT id, body::text FROM docs WHERE id = $1', values: [`a${i}`] }));
  results.postgres!.read = await timed('postgres: point read', N, (i) => sql`SELECT id, body::text FROM docs WHERE id = ${`b${i}`}`);
  const batch = (p: string, i: number) => JSON.stringify(Array.from({ length: 16 }, (_, k) => ({ id: `${p}${i}-${k}`, body: JSON.parse(body) })));
  results.pg!.batch16 = 16 * await timed('pg: 16-document JSON batch (docs/s ÷16)', N / 8, (i) => pool.query({ name: 'batch', text: 'SELECT put_many($1::jsonb)', values: [batch('c', i)] }));
  results.postgres!.batch16 = 16 * await timed('postgres: 16-document JSON batch (docs/s ÷16)', N / 8, (i) => sql.unsafe('SELECT put_many($1::text::jsonb)', [batch('d', i)], { prepare: true }));
  await pool.end();
  await sql.end();
  save('pg-driver', { machine: machine(), n: N, concurrency: CONC, results });
} finally {
  await server.kill();
}
