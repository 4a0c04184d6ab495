import t from 'tap';
import { MemoryStore } from 'svc';
import { storeConformance } from '../../conformance/anchor-store.ts';

storeConformance(t, async () => new MemoryStore());

// The object body form, as a document database takes bodies: the same suite holds.
t.test('object body form', async (t) => {
  storeConformance(t, async () => new MemoryStore({ bodyForm: 'object' }));
});
