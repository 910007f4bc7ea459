// The gzip path of the line encoder: an end() in progress when the part is destroyed (a run
// aborting while rotation closes a part) settles instead of waiting for an 'end' that never comes.
import { expect, it } from 'vitest';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import { TextLinesEncoder } from '../../src/sinks/shared/text-lines-encoder.js';

function memory(): ByteDestination {
  const dest = {
    kind: 'file' as const,
    location: 'memory',
    bytes: 0,
    write(chunk: Uint8Array) {
      dest.bytes += chunk.length;
    },
    commit: async () => {},
    abort: async () => {},
  };
  return dest;
}

it('end() settles (rejects) when the gzip part is destroyed before it ended, however far it got', async () => {
  for (const lines of [1, 1000]) {
    const encoder = new TextLinesEncoder<string>(memory(), { gzip: true, line: (s) => `${s}\n` });
    for (let i = 0; i < lines; i++) await encoder.write(`line ${i} ${'x'.repeat(100)}`);
    const ending = encoder.end();
    await new Promise((resolve) => setImmediate(resolve));
    encoder.destroy();
    await expect(ending).rejects.toThrow();
  }
}, 10_000);

it('end() resolves once the gzip stream ended, and destroy() after it changes nothing', async () => {
  const dest = memory();
  const encoder = new TextLinesEncoder<string>(dest, { gzip: true, line: (s) => `${s}\n` });
  await encoder.write('one');
  await encoder.end();
  encoder.destroy();
  expect(dest.bytes).toBeGreaterThan(0);
});
