import t from 'tap';
import { MemoryStore } from 'svc';
import { storeConformance } from './conformance.ts';

storeConformance(t, async () => new MemoryStore());
