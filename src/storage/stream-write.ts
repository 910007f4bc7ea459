// Writing to a Node stream with backpressure: the caller waits for 'drain' instead of queueing
// without bound (used by local temp files and by the sinks' destinations).
import type { Writable } from 'node:stream';

/**
 * Writes to a stream, resolving when it may take more: at once when `write` returned
 * true, else on `drain`; rejects if the stream errors or closes first.
 */
export function writeWithBackpressure(stream: Writable, chunk: Uint8Array | string): void | Promise<void> {
  if (stream.write(chunk)) return;
  return waitForDrain(stream);
}

export function waitForDrain(stream: Writable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // A stream that already closed emits neither 'drain' nor 'close' again.
    if (stream.destroyed) {
      reject(stream.errored ?? new Error('the output stream closed before it drained'));
      return;
    }
    const cleanup = () => {
      stream.off('drain', onDrain);
      stream.off('error', onError);
      stream.off('close', onClose);
    };
    const onDrain = () => {
      cleanup();
      resolve();
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onClose = () => {
      cleanup();
      reject(stream.errored ?? new Error('the output stream closed before it drained'));
    };
    stream.on('drain', onDrain);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}
