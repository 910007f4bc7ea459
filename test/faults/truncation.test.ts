// Fault matrix: bodies that end cleanly but early (issue 15, item 17), through
// the built CLI against the sandbox. A page whose JSON stops half-way (a proper
// end of the chunked body, as a proxy that gives up sends it) is a transient
// fault: the page is asked for again, within connection.maxAttempts. An NDJSON
// stream that ends in the middle of a line, or at a line boundary before
// `total`, is resumed like a cut one. A stream cut at the same line every time
// passes the cut when the sorting lets the request start after what was
// delivered (createdAt); with `{id: ASC}` the API offers no such filter, and the
// resumes are bounded with an error that says so.
import { describe, expect, it } from 'vitest';
import type { SandboxFaults } from '../../src/sandbox/index.js';
import {
  expectExactIds,
  faultFixture,
  jsonLines,
  jsonlIds,
  leftBehind,
  runCli,
  runPath,
  sandboxEnv,
  summaryRunId,
} from './support.js';

function pipeline(source: string, sorting = '{ id: ASC }', extra = ''): string {
  return `name: cut
connection: { maxAttempts: 3 }
source:
  type: ${source}
  filter: { status: [active, inactive, replaced] }
  sorting: ${sorting}${extra}
sinks:
  - { type: jsonl, path: "out/products-{run}.jsonl" }
state: { path: .state/cut.json }
`;
}

const f = faultFixture('cut', pipeline('products.query'), { products: 2500, seed: 43 });

// --quiet where the test counts the faulted responses: without it the progress display's plan
// probes the same endpoint beside the run and takes some of them.
async function run(yaml: string, faults: SandboxFaults, args: string[] = []) {
  await f.ws.write(f.ws.file, yaml);
  f.sandbox.setFaults(faults);
  const result = await runCli(['run', f.ws.file, ...args], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
  return { ...result, lines: jsonLines(result.stderr) };
}

async function expectComplete(result: Awaited<ReturnType<typeof run>>) {
  expect(result.code, result.stderr).toBe(0);
  const runId = summaryRunId(result.stderr);
  expectExactIds(await jsonlIds(f.ws.path(runPath('out/products-{run}.jsonl', runId))), f.expected);
  expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [`products-${runId}.jsonl`], temp: [] });
  expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
}

async function expectFailed(result: Awaited<ReturnType<typeof run>>, code: string) {
  expect(result.code, result.stderr).toBe(1);
  const failed = result.lines.find((l) => l.event === 'failed');
  expect(failed, result.stderr).toMatchObject({ level: 'error', code });
  expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
  expect(await f.ws.read('.state/cut.json')).toBe(f.ws.state);
  return failed!;
}

describe('truncated bodies', () => {
  it('a page body that ends cleanly half-way is asked for again; every id once; exit 0', async () => {
    const result = await run(
      pipeline('products.query'),
      { truncatedPage: { times: 2 }, endpoints: ['products.query'] },
      ['--quiet'],
    );
    await expectComplete(result);
    expect(f.sandbox.stats.faults.truncatedPages).toBe(2);
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({ status: 'succeeded', retries: 2 });
  });

  it('a page truncated on every attempt fails after connection.maxAttempts, naming the endpoint', async () => {
    const result = await run(
      pipeline('products.query'),
      { truncatedPage: { times: Infinity }, endpoints: ['products.query'] },
      ['--quiet'],
    );
    const failed = await expectFailed(result, 'network.truncated');
    expect(failed.message).toMatch(/products\.query .*after 3 attempts/);
    expect(f.sandbox.stats.faults.truncatedPages).toBe(3);
  });

  it('an NDJSON stream that ends cleanly mid-line is resumed; every id once; exit 0', async () => {
    const result = await run(pipeline('products.stream'), { streamTruncated: { afterLines: 900 } });
    await expectComplete(result);
    expect(f.sandbox.stats.faults.truncatedStreams).toBe(1);
    expect(result.lines.filter((l) => l.code === 'source.stream_resumed')).toHaveLength(1);
  });

  it('an NDJSON stream that ends cleanly short of total is resumed; every id once; exit 0', async () => {
    const result = await run(pipeline('products.stream'), { shortStream: { dropLast: 5 } });
    await expectComplete(result);
  });

  it('a stream cut at the same line every time, sorted by createdAt: each resume starts after what was delivered; exit 0', async () => {
    const result = await run(pipeline('products.stream', '{ createdAt: ASC }'), {
      streamCut: { afterLines: 600, times: Infinity },
    });
    await expectComplete(result);
    const resumes = result.lines.filter((l) => l.code === 'source.stream_resumed');
    expect(resumes.length).toBeGreaterThanOrEqual(4);
    expect(resumes[0]!.message).toContain('createdAt');
  });

  it('a stream cut at the same line every time, sorted by id: bounded resumes, then exit 1 saying why', async () => {
    const result = await run(pipeline('products.stream', '{ id: ASC }', '\n  maxResumes: 2'), {
      streamCut: { afterLines: 600, times: Infinity },
    });
    const failed = await expectFailed(result, 'stream.resume_exhausted');
    expect(failed.message).toContain('next index 600');
    expect(failed.message).toContain('sorting {createdAt: ASC}');
    // maxResumes (2) resumes in a row without progress, each from the same index. A first
    // connection reset before all 600 lines were read makes the second one progress, and
    // progress starts the count again: one resume more, never an endless loop.
    const resumes = result.lines.filter((l) => l.code === 'source.stream_resumed');
    expect(resumes.length).toBeGreaterThanOrEqual(2);
    expect(resumes.length).toBeLessThanOrEqual(3);
    expect(resumes.slice(-2).map((l) => l.index)).toEqual([600, 600]);
    expect(f.sandbox.stats.faults.streamCuts).toBeGreaterThanOrEqual(3);
  });
});
