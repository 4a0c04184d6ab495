import t from 'tap';
import { MemoryStore } from 'svc';
import { storeConformance } from '../../helpers/store-conformance.ts';

storeConformance(t, async () => new MemoryStore());

// The object body form, as a document database takes bodies: the same suite holds.
t.test('object body form', async (t) => {
  storeConformance(t, async () => new MemoryStore({ bodyForm: 'object' }));
});
