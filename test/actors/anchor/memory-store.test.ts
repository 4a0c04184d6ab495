import t from 'tap';
import { MemoryStore } from 'svc';
import { storeConformance } from '../../helpers/store-conformance.ts';

storeConformance(t, async () => new MemoryStore());
