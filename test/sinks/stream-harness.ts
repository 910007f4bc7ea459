// Stream choreography shared by the sink tests: wait for a sink to close, and
// fail a pipeline half-way through.
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Resolves once the stream has emitted 'close' (its cleanup is over). */
export async function waitClosed(stream: Writable): Promise<void> {
  if (stream.closed) return;
  await new Promise((resolve) => stream.once('close', resolve));
}

/** Polls `condition` every 10 ms until it holds; fails after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Pushes `records` through a pipeline into `sink`, waits until `until` holds (the partial
 * state to catch), then fails the source with `error`. Resolves with the pipeline's
 * rejection once the sink has closed.
 */
export async function failMidStream(
  sink: Writable,
  records: Iterable<unknown>,
  options: { until: () => boolean | Promise<boolean>; error?: Error },
): Promise<unknown> {
  const source = new Readable({ objectMode: true, read() {} });
  const done = pipeline(source, sink);
  for (const record of records) source.push(record);
  await waitFor(options.until, 'the sink to be part-way through');
  source.destroy(options.error ?? new Error('the source failed'));
  const failure = await done.then(
    () => undefined,
    (err: unknown) => err,
  );
  await waitClosed(sink);
  return failure;
}
