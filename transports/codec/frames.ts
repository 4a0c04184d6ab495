/**
 * Frames on the wire: msgpackr, with actor refs carried by address and
 * rebuilt by the receiving system. msgpackr's reader renames a `__proto__`
 * key `__proto_`; a frame holding one is refused at encoding instead
 * (kernel/reserved-key.ts), so data never arrives changed.
 */
import { addExtension, Packr, Unpackr } from 'msgpackr';
import { ActorRefBase, type ActorRef, type Frame, type RefAddress, RESERVED_KEY, reservedKeyPath, SvcError } from '../../kernel/index.ts';

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

/** `__proto__` as msgpack writes it (a fixstr of 9 bytes): as a key, msgpackr's reader renames it `__proto_`. */
const RESERVED_BYTES = Buffer.concat([Buffer.from([0xa0 | RESERVED_KEY.length]), Buffer.from(RESERVED_KEY)]);

/**
 * Encode a batch of frames into one buffer that owns its memory (so it can be
 * transferred). A frame holding an own `__proto__` key anywhere is refused
 * (`RESERVED_KEY`) rather than delivered renamed: the bytes are searched for
 * the name (cheap), and only when it is there are the frames walked.
 */
export function encodeFrames(frames: readonly Frame[]): Uint8Array {
  const view = packr.pack(frames);
  if (view.indexOf(RESERVED_BYTES) >= 0) {
    const at = reservedKeyPath(frames, 'frames');
    if (at !== undefined) throw new SvcError('RESERVED_KEY', `a message between threads holds a key named ${RESERVED_KEY} (${at}), which cannot cross intact: it is refused rather than renamed`, { status: 400 });
  }
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
