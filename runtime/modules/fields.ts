/** The `fields` module: what is done with fields an endpoint does not declare. */
import { UnknownFields } from '../../actors/walker/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { LOG, UNKNOWN_FIELDS } from '../keys.ts';

/** Fields a client sends that the endpoint does not declare: refused, or (`strict_fields = false`) warned about once per walker and field — HTTP and WebSocket alike. */
export function fieldsModule(boot: ServeBoot): RuntimeModule {
  return {
    name: 'fields',
    needs: [LOG],
    provides: [UNKNOWN_FIELDS],
    start(rt) {
      const log = rt.need(LOG);
      rt.provide(UNKNOWN_FIELDS, new UnknownFields({ strict: boot.config['scale.server'].strict_fields, warn: (message, extra) => log.warn(extra, message) }));
    },
  };
}
