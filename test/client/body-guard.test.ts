// The body guard on a fake clock: idle and minimum-rate limits count only the time the consumer
// waits for the service; a paused consumer (a slow sink) is backpressure, never a slow service. No
// real time passes in these tests.
import { PassThrough, type Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type BodyProblem, type GuardClock, guardBody } from '../../src/client/body-guard.js';
import { parseJson, quoteUnsafeIntegers } from '../../src/client/json-text.js';

class FakeClock implements GuardClock {
  t = 0;
  ticks = new Set<() => void>();
  interval = 0;
  now = () => this.t;
  every(ms: number, tick: () => void): () => void {
    this.interval = ms;
    this.ticks.add(tick);
    return () => this.ticks.delete(tick);
  }
  /** Moves time on by `ms`, ticking as a timer would. */
  advance(ms: number): void {
    for (let left = ms; left > 0; left -= this.interval) {
      this.t += Math.min(this.interval, left);
      for (const tick of [...this.ticks]) tick();
    }
  }
}

function guarded(options: { idleMs?: number; minBytesPerSecond?: number; rateWindowMs?: number }) {
  const clock = new FakeClock();
  const source = new PassThrough();
  const problems: BodyProblem[] = [];
  const body: Readable = guardBody(source, {
    idleMs: options.idleMs ?? 0,
    minBytesPerSecond: options.minBytesPerSecond ?? 0,
    rateWindowMs: options.rateWindowMs ?? 0,
    clock,
    failure: (problem) => {
      problems.push(problem);
      return Object.assign(new Error(problem.kind), { code: problem.kind });
    },
  });
  let error: Error | undefined;
  body.on('error', (err) => (error = err));
  return { clock, source, body, problems, error: () => error };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('body guard', () => {
  it('idle: fails after idleMs without a byte while the consumer reads; every byte restarts the count', async () => {
    const g = guarded({ idleMs: 1000 });
    g.body.on('data', () => {});
    g.clock.advance(900);
    g.source.write('x');
    await tick();
    g.clock.advance(900);
    expect(g.problems).toEqual([]);
    g.clock.advance(200);
    await tick();
    expect(g.problems).toEqual([{ kind: 'idle', idleMs: 1000 }]);
    expect(g.error()?.message).toBe('idle');
    expect(g.source.destroyed).toBe(true);
  });

  it('a paused consumer with a full buffer does not count, however long', async () => {
    const g = guarded({ idleMs: 1000, minBytesPerSecond: 1000, rateWindowMs: 2000 });
    g.body.pause();
    g.source.write(Buffer.alloc(200 * 1024));
    await tick();
    g.clock.advance(3_600_000);
    expect(g.problems).toEqual([]);
    // reading again: the buffered bytes come, then the service has to send more
    g.body.resume();
    g.body.on('data', () => {});
    await tick();
    g.clock.advance(1000);
    expect(g.problems.map((p) => p.kind)).toEqual(['idle']);
  });

  it('slow: fewer than minBytesPerSecond over the window fails, though it never went idle', async () => {
    const g = guarded({ idleMs: 1000, minBytesPerSecond: 100, rateWindowMs: 10_000 });
    g.body.on('data', () => {});
    for (let i = 0; i < 10; i++) {
      g.source.write('x'.repeat(10));
      await tick();
      g.clock.advance(999);
    }
    expect(g.problems).toEqual([]);
    g.source.write('x'.repeat(10));
    await tick();
    g.clock.advance(999);
    expect(g.problems).toEqual([{ kind: 'slow', bytes: 110, windowMs: expect.any(Number), minBytesPerSecond: 100 }]);
    expect(g.problems[0]).toMatchObject({ windowMs: expect.toSatisfy((ms: number) => ms >= 10_000) });
  });

  it('a gap shorter than idleMs in a fast body passes the rate check (a healthy long stream)', async () => {
    const g = guarded({ idleMs: 120_000, minBytesPerSecond: 1024, rateWindowMs: 300_000 });
    g.body.on('data', () => {});
    for (let minute = 0; minute < 20; minute++) {
      if (minute === 7) g.clock.advance(60_000); // one 60 s gap, no keep-alive bytes
      for (let s = 0; s < 60; s++) {
        g.source.write(Buffer.alloc(500 * 1024));
        await tick();
        g.clock.advance(1000);
      }
    }
    g.source.end();
    await tick();
    expect(g.problems).toEqual([]);
  });
});

describe('parseJson: integers past 2^53 as their digits', () => {
  it.each([
    ['{"a":32000000000000001}', { a: '32000000000000001' }],
    ['{"a": -9007199254740993 }', { a: '-9007199254740993' }],
    ['[9007199254740991,9007199254740992]', [9007199254740991, '9007199254740992']],
    ['{"a":12345678901234567.5,"b":1234567890123456789e-3}', { a: 12345678901234568, b: 1234567890123456.8 }],
    ['{"s":"99999999999999999","k\\"99999999999999999":1}', { s: '99999999999999999', 'k"99999999999999999': 1 }],
    ['{"a":0.00000000000000001}', { a: 1e-17 }],
  ])('%s', (text, expected) => {
    expect(parseJson(text)).toEqual(expected);
  });

  it('text without a 16-digit run is parsed as is; invalid JSON keeps its own error', () => {
    expect(quoteUnsafeIntegers('{"a":1}')).toBe('{"a":1}');
    expect(() => parseJson('{"a":99999999999999999')).toThrow(SyntaxError);
    expect(() => parseJson('{"a":99999999999999999')).toThrow(/JSON/);
  });
});
