/**
 * The wire form of kernel frames (msgpackr, actor refs carried by address),
 * shared by every transport that leaves the thread: MessagePorts between
 * threads, sockets or Redis between processes.
 */
export { encodeFrames, decodeFrames } from './frames.ts';
