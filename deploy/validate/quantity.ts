/**
 * Kubernetes resource quantities (`100m`, `0.5`, `128Mi`, `1G`, `1e3`) read
 * into plain numbers: cores for CPU, bytes for memory and storage.
 */

/** Binary suffixes: powers of 1024. */
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
/** Decimal suffixes: powers of 1000 (`m` is milli; there is no upper-case `K`). */
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/**
 * Kubernetes' grammar: a signed decimal number, then one binary suffix, one
 * decimal suffix or an exponent (`e3`, `E-2`). `1E` is an exa, `1E3` a thousand.
 */
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+)|([numkMGTPE]?))$/;

/**
 * A Kubernetes quantity in base units — cores for CPU (`250m` → 0.25), bytes
 * for memory and storage (`128Mi` → 134217728, `1G` → 1e9) — or `NaN` when
 * Kubernetes would refuse it (`1K`: decimal kilo is `k`, binary `Ki`; `abc`;
 * an empty string). A JSON number is a quantity too.
 *
 * @example
 * parseQuantity('100m'); // 0.1
 * parseQuantity('1Gi');  // 1073741824
 * parseQuantity('1k');   // 1000
 * parseQuantity('1e3');  // 1000
 * Number.isNaN(parseQuantity('1K')); // true
 */
export function parseQuantity(value: string | number): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : Number.NaN;
  if (typeof value !== 'string') return Number.NaN;
  const m = QUANTITY.exec(value);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  if (m[2] !== undefined) return n * (BINARY[m[2]] as number);
  if (m[3] !== undefined) return n * 10 ** Number(m[3]);
  return n * (DECIMAL[m[4] ?? ''] as number);
}

/**
 * Why a quantity does not parse, in words a user can act on, or undefined
 * when it does.
 *
 * @example
 * quantityProblem('1K'); // '"1K" is not a Kubernetes quantity: the decimal kilo suffix is lower-case k (binary: Ki)'
 * quantityProblem('1Gi'); // undefined
 */
export function quantityProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return `${JSON.stringify(value)} is not a Kubernetes quantity (a string such as 250m, 0.5, 128Mi or 1G)`;
  if (!Number.isNaN(parseQuantity(value))) return undefined;
  const text = JSON.stringify(value);
  if (typeof value === 'string' && /^[+-]?[\d.]+K$/.test(value)) return `${text} is not a Kubernetes quantity: the decimal kilo suffix is lower-case k (binary: Ki)`;
  if (typeof value === 'string' && /^[+-]?[\d.]+(KB|MB|GB|TB|kb|mb|gb|Kb|Mb|Gb|ki|mi|gi)$/.test(value)) {
    return `${text} is not a Kubernetes quantity: the suffixes are k M G T (decimal) and Ki Mi Gi Ti (binary), without a B`;
  }
  return `${text} is not a Kubernetes quantity (such as 250m, 0.5, 2, 128Mi, 1Gi, 500M, 1k or 1e3)`;
}
