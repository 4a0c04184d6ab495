/**
 * A small app with one of each kind `svc start` lists: a walker, a hook, a WebSocket walker, a webhook
 * walker and an event subscription (the listing and the webhook-secret tests start it).
 * @example t.testdir({ 'app.ts': EVERY_KIND })
 */
export const EVERY_KIND = `import { APIProtocol, entry, restspec, Root, subscribe, Walker } from 'svc';
export class Hello extends Walker {
  static access = 'pub' as const;
  @entry(Root) hi() { this.report('hi'); }
}
export class _RequireKey extends Walker {
  @entry(Root) check() {}
}
export class Announce extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  @entry(Root) say() { this.report('news'); }
}
export class GithubPush extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBHOOK });
  @entry(Root) push() { this.report('pushed'); }
}
export const onOrder = subscribe('order.created', () => undefined);
`;
