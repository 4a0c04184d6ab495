/** The `store` module: the graph store chosen by `docdb_uri` (instrumented), its writes handed to the main thread when it serves the writer. */
import type { ActorRef } from '../../kernel/index.ts';
import { InstrumentedStore, openAnchorStore, type WriterMsg } from '../../actors/graph/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { STORE } from '../keys.ts';

export function storeModule(boot: ServeBoot, processWriter: ActorRef<WriterMsg, unknown> | undefined): RuntimeModule {
  let store: InstrumentedStore | undefined;
  return {
    name: 'store',
    provides: [STORE],
    async start(rt) {
      const db = boot.config['scale.database'];
      // Instrumented: commit latency, batch sizes and conflicts for whoever observes (metrics), free while nobody does.
      store = new InstrumentedStore(
        await openAnchorStore(db.docdb_uri, {
          path: boot.storePath,
          baseDir: boot.projectRoot,
          synchronous: db.synchronous as 'NORMAL' | 'FULL',
          processWriter,
          createSchema: boot.schemaReady !== true,
        }),
      );
      rt.provide(STORE, store);
    },
    close: () => store?.close(),
  };
}
