// RunSignals in-process: what the first signal says and stops, that a second one ends the process
// with the first one's code (0 once every pipeline committed), and that after the run's conclusion a
// signal changes nothing (signals.test.ts stops real processes; the forced exit has no clean-up to check).
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RunEvents } from '../../src/events.js';
import type { ProgressHandle } from '../../src/cli/progress.js';
import { RunSignals } from '../../src/cli/run-signals.js';

function setup(names = ['a', 'b']) {
  const lines: Array<{ level: string; event: string; fields: Record<string, unknown> }> = [];
  const exits: number[] = [];
  let stops = 0;
  const progress: ProgressHandle = {
    log: (level, event, fields = {}) => lines.push({ level, event, fields }),
    add: () => {},
    extraFields: new Map(),
    stop: () => void stops++,
  };
  const signals = new EventEmitter();
  const run = new RunSignals(names, progress, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: {},
    signals,
    exit: (c) => exits.push(c),
  });
  run.install();
  return { run, signals, lines, exits, stops: () => stops };
}

describe('RunSignals', () => {
  it('the first signal stops the run: its abort, its exit code, one warning', () => {
    const { run, signals, lines, exits } = setup();
    signals.emit('SIGTERM');
    expect(run.signal.aborted).toBe(true);
    expect(run.received).toBe('SIGTERM');
    expect(run.stoppedExitCode).toBe(143);
    expect(exits).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      event: 'signal',
      fields: { signal: 'SIGTERM', pipelines: ['a', 'b'] },
    });
    expect(lines[0]!.fields.message).toMatch(/^SIGTERM received: stopping, discarding partial outputs/);
  });

  it('names the pipelines that committed before it', () => {
    const { run, signals, lines } = setup();
    const events = new RunEvents();
    run.watchCommit(events);
    events.emit('info', { code: 'outputs_committed', message: 'committed', pipeline: 'a' });
    signals.emit('SIGINT');
    expect(lines[0]!.fields.message).toContain('; a had already committed and keeps its outputs and cursor');
  });

  it('after every pipeline settled, it changes nothing', () => {
    const { run, signals, lines } = setup();
    run.settled('a');
    run.settled('b');
    signals.emit('SIGHUP');
    expect(lines[0]!.fields.message).toMatch(/^SIGHUP received after the run committed its outputs: finishing/);
  });

  it('a second signal ends the process with the first one’s code', () => {
    const { signals, lines, exits, stops } = setup();
    signals.emit('SIGTERM');
    signals.emit('SIGINT');
    expect(exits).toEqual([143]);
    expect(stops()).toBe(1);
    expect(lines[1]).toMatchObject({ level: 'error', event: 'signal', fields: { signal: 'SIGINT' } });
    expect(lines[1]!.fields.message).toMatch(
      /^second SIGINT: exiting now \(exit 143\) without waiting for the clean-up/,
    );
  });

  it('a second signal once every pipeline committed ends the process with 0: the outputs stand', () => {
    const { run, signals, exits } = setup();
    const events = new RunEvents();
    run.watchCommit(events);
    for (const pipeline of ['a', 'b'])
      events.emit('info', { code: 'outputs_committed', message: 'committed', pipeline });
    signals.emit('SIGTERM');
    signals.emit('SIGTERM');
    expect(exits).toEqual([0]);
  });

  it('once the run is concluded a signal changes nothing; a second ends the process with the concluded code', () => {
    const { run, signals, lines, exits } = setup();
    run.conclude(0);
    signals.emit('SIGTERM');
    expect(run.signal.aborted).toBe(false);
    expect(exits).toEqual([]);
    expect(lines[0]!.fields.message).toBe(
      'SIGTERM received after the run ended: it changes nothing, the exit code stays 0',
    );
    signals.emit('SIGTERM');
    expect(exits).toEqual([0]);
  });

  it('a stop, then the conclusion (exit 143), then a signal: exits with 143 at once', () => {
    const { run, signals, exits } = setup();
    signals.emit('SIGINT');
    run.conclude(130);
    signals.emit('SIGTERM');
    expect(exits).toEqual([130]);
  });

  it('once uninstalled, signals are not its business', () => {
    const { run, signals, lines } = setup();
    run.uninstall();
    expect(signals.listenerCount('SIGTERM')).toBe(0);
    signals.emit('SIGTERM');
    expect(run.signal.aborted).toBe(false);
    expect(lines).toEqual([]);
  });
});
