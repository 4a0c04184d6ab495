// A hook walker, your own error codes, and validation limits.
//
//   Every generated route first runs _ApiKeyCheck: without `x-demo-key: demo` → 401 DEMO_KEY_REQUIRED.
//   POST /walker/Withdraw   {"cents": 500}    409 INSUFFICIENT_FUNDS when the balance is too low (nothing committed)
//   POST /walker/Deposit    {"cents": 500}    400 VALIDATION_ERROR for cents < 1 or a string
import { entry, Node, Root, SvcError, T, Walker } from 'svc';

export class Account extends Node {
  static has = T.Object({ cents: T.Integer({ default: 0, minimum: 0 }) });
  declare cents: number;
}

/** A hook: named `_…`, runs before every generated walker and function route. */
export class _ApiKeyCheck extends Walker {
  static has = T.Object({
    headers: T.Record(T.String(), T.String()),
    request: T.Object({ method: T.String(), path: T.String() }),
  });
  declare headers: Record<string, string>;
  declare request: { method: string; path: string };

  @entry(Root) check() {
    if (this.headers['x-demo-key'] !== 'demo') {
      // A report with a numeric status ≥ 400 ends the request with that status and an error envelope.
      this.report({ status: 401, code: 'DEMO_KEY_REQUIRED', message: `send x-demo-key to call ${this.request.path}` });
    }
  }
}

async function account(here: Root): Promise<Account> {
  const [found] = await here.out(Account);
  return found ?? (await here.connect(new Account()));
}

export class Deposit extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ cents: T.Integer({ minimum: 1, maximum: 1_000_000 }) });
  declare cents: number;

  @entry(Root) async deposit(here: Root) {
    const acct = await account(here);
    acct.cents += this.cents;
    this.report({ balance: acct.cents });
  }
}

export class Withdraw extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ cents: T.Integer({ minimum: 1 }) });
  declare cents: number;

  @entry(Root) async withdraw(here: Root) {
    const acct = await account(here);
    if (acct.cents < this.cents) {
      // Your own code and status; the run commits nothing (the account made above is not kept either).
      throw new SvcError('INSUFFICIENT_FUNDS', `balance ${acct.cents} < ${this.cents}`, { status: 409 });
    }
    acct.cents -= this.cents;
    this.report({ balance: acct.cents });
  }
}
