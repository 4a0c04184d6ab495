/**
 * Frames on the wire: msgpackr, with actor refs carried by address and
 * rebuilt by the receiving system.
 */
import { addExtension, Packr, Unpackr } from 'msgpackr';
import { ActorRefBase, type ActorRef, type Frame, type RefAddress } from '../../kernel/index.ts';

const REF_EXTENSION = 40;

/** The resolver of the decode under way (decoding is synchronous, so one slot is enough). */
let resolving: ((address: RefAddress) => ActorRef) | null = null;

addExtension({
  Class: ActorRefBase,
  type: REF_EXTENSION,
  write: (ref: ActorRefBase) => ref.address(),
  read(address: RefAddress) {
    if (!resolving) throw new Error('an actor ref was decoded outside a transport');
    return resolving(address);
  },
});

const packr = new Packr({ moreTypes: true });
const unpackr = new Unpackr({ moreTypes: true });

/** Encode a batch of frames into one buffer that owns its memory (so it can be transferred). */
export function encodeFrames(frames: readonly Frame[]): Uint8Array {
  const view = packr.pack(frames);
  // The packer reuses its buffer: copy out exactly the bytes of this batch.
  return new Uint8Array(view);
}

/** Decode a batch, rebuilding refs through `resolve`. */
export function decodeFrames(bytes: Uint8Array, resolve: (address: RefAddress) => ActorRef): Frame[] {
  resolving = resolve;
  try {
    return unpackr.unpack(bytes) as Frame[];
  } finally {
    resolving = null;
  }
}
