/** The `data` module: `store()` and `kvstore()` of app code on this thread. */
import { dirname, join, resolve } from 'node:path';
import type { Registry } from '../../actors/walker/index.ts';
import { bindData, closeData, type DataBinding } from '../../actors/data/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { STORE } from '../keys.ts';

/** `store()` and `kvstore()` of app code on this thread: their settings and the graph `findNodes` reads; their connections closed at the end. */
export function dataModule(boot: ServeBoot, registry: Registry): RuntimeModule {
  let unbind: (() => void) | undefined;
  return {
    name: 'data',
    needs: [STORE],
    start(rt) {
      const db = boot.config['scale.database'];
      unbind = bindData({
        projectRoot: resolve(boot.projectRoot),
        dataDir: boot.storePath ? dirname(boot.storePath) : join(resolve(boot.projectRoot), '.svc', 'data'),
        storage: boot.config.storage as DataBinding['storage'],
        docdbUri: db.docdb_uri,
        kvUrl: db.kv_url,
        graph: { store: rt.need(STORE), registry },
      });
    },
    async close() {
      unbind?.();
      await closeData();
    },
  };
}
