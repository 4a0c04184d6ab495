// Tracking walker runs (an AsyncLocalStorage: on Node 20 it costs every promise of the thread, a quarter of a request's CPU
// on the echo benchmark) is turned on by the app's own document handles, whose `findNodes` must know the calling run —
// never by the runtime's (sandbox records, …), which every app opens at start. Its own process: the flag is per thread.
import t from 'tap';
import '../../../stores/index.ts';
import { kvstore } from '../../../actors/data/index.ts';
import { runTrackingWanted } from '../../../actors/walker/index.ts';

t.test('a runtime handle leaves runs untracked; an app handle tracks them from then on', async (t) => {
  t.equal(runTrackingWanted(), false, 'nothing asked yet');
  kvstore('svc', 'docdb', undefined, { runtimeCollections: true });
  t.equal(runTrackingWanted(), false, "svc's own records do not turn tracking on");
  kvstore('shop', 'docdb');
  t.equal(runTrackingWanted(), true, "an app's document handle does");
});
