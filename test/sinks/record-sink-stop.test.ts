// A sink stopped while it commits (a SIGTERM during the last steps of a run):
// the data outputs it committed are revoked, and a side object it was writing
// at that moment (the S3 manifest) is removed again once written, so nothing
// lists data that is gone. Deterministic: the manifest write waits on a gate
// the test opens after destroying the sink.
import { describe, expect, it } from 'vitest';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import { jsonlFormat } from '../../src/sinks/jsonl/jsonl-encoding.js';
import { PathTemplate } from '../../src/sinks/shared/path-template.js';
import { type CommittedOutput, RecordSink } from '../../src/sinks/shared/record-sink.js';
import { testContext } from '../helpers/stage-context.js';
import { waitClosed, waitFor } from './stream-harness.js';

function memoryDestination(location: string, log: string[]): ByteDestination {
  let bytes = 0;
  return {
    kind: 'object',
    location,
    get bytes() {
      return bytes;
    },
    write: (chunk) => void (bytes += chunk.byteLength),
    commit: async () => void log.push(`commit ${location}`),
    abort: async () => void log.push(`abort ${location}`),
    revoke: async () => void log.push(`revoke ${location}`),
  };
}

function sinkWithGatedManifest() {
  const ctx = testContext();
  const log: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let writingManifest = false;
  const sink = new RecordSink<Record<string, unknown>>({
    sinkType: 's3',
    ctx,
    format: jsonlFormat({ gzip: false }),
    template: PathTemplate.parse('data/part-{part}.jsonl', ctx.run, 'key'),
    templateOption: 'key',
    locate: (rendered) => rendered,
    openDestination: (location) => memoryDestination(location, log),
    rotation: { maxOpenPartitions: 8 },
    commitOnClose: true,
    writeEmpty: false,
    afterCommit: async (): Promise<CommittedOutput[]> => {
      writingManifest = true;
      await gate;
      log.push('put manifest');
      return [
        {
          output: { kind: 'object', location: 'data/_manifest.json', rows: 0, bytes: 10, sink: 's3' },
          revoke: async () => void log.push('delete manifest'),
        },
      ];
    },
  });
  return { sink, log, open, writing: () => writingManifest };
}

describe('RecordSink stopped while it commits', () => {
  it('a manifest written after the stop is deleted again; the committed data is revoked; no outputs', async () => {
    const { sink, log, open, writing } = sinkWithGatedManifest();
    const errors: Error[] = [];
    sink.on('error', (err) => errors.push(err));
    sink.write({ id: 'P1' });
    sink.write({ id: 'P2' });
    sink.end();
    await waitFor(writing, 'the manifest write to start');
    sink.destroy(new Error('stopped'));
    open();
    await waitClosed(sink);
    // The data is revoked by the destroy, the manifest deleted by the commit step once written (in either order).
    expect([...log].sort()).toEqual([
      'commit data/part-00000.jsonl',
      'delete manifest',
      'put manifest',
      'revoke data/part-00000.jsonl',
    ]);
    expect(log.indexOf('delete manifest')).toBeGreaterThan(log.indexOf('put manifest'));
    expect(sink.outputs).toEqual([]);
    expect(errors.map((e) => e.message)).toEqual(['stopped']);
  });

  it('not stopped (control): the manifest stays and is listed with the data', async () => {
    const { sink, log, open } = sinkWithGatedManifest();
    sink.write({ id: 'P1' });
    sink.end();
    open();
    await new Promise((resolve, reject) => sink.once('finish', resolve).once('error', reject));
    expect(log).toEqual(['commit data/part-00000.jsonl', 'put manifest']);
    expect(sink.outputs.map((o) => o.location)).toEqual(['data/part-00000.jsonl', 'data/_manifest.json']);
  });
});
