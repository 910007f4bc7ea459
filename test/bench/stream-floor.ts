// The hand-written client of a streamed extract, the baseline `products.stream`
// -> JSONL is compared with in the jsonl scenario: one POST to
// /v4/products/stream with undici, the NDJSON body split into lines, each line
// `JSON.parse`d, its `result` `JSON.stringify`d and written as a JSON line with
// backpressure (the socket waits while the file drains). Nothing else: no
// check of indexes, totals or order, no resume.
//
//   node dist/test/bench/stream-floor.js '{"connection":{...},"filter":{...},"jsonl":"/tmp/x.jsonl"}'
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { request } from 'undici';
import { type Measurement, measure, scenarioMain } from './measure.js';
import { basicAuthorization } from './page-floor.js';
import type { SandboxConnection } from './sandbox-process.js';

export interface StreamFloorArgs {
  connection: SandboxConnection;
  filter: unknown;
  sorting?: unknown;
  jsonl: string;
}

export type StreamFloorResult = Measurement & { bytes: number };

async function streamToJsonl(args: StreamFloorArgs): Promise<{ records: number; bytes: number }> {
  const res = await request(`${args.connection.baseUrl}/v4/products/stream`, {
    method: 'POST',
    headers: { authorization: basicAuthorization(args.connection), 'content-type': 'application/json' },
    body: JSON.stringify({ filter: args.filter, sorting: args.sorting ?? { id: 'ASC' } }),
  });
  if (res.statusCode !== 200) throw new Error(`products/stream answered ${res.statusCode}`);
  res.body.setEncoding('utf8');
  const out = createWriteStream(args.jsonl);
  let records = 0;
  let bytes = 0;
  let rest = '';
  for await (const text of res.body as AsyncIterable<string>) {
    bytes += text.length;
    const lines = (rest + text).split('\n');
    rest = lines.pop()!;
    let chunk = '';
    for (const line of lines) {
      if (line.length === 0) continue;
      chunk += `${JSON.stringify((JSON.parse(line) as { result: unknown }).result)}\n`;
      records++;
    }
    if (!out.write(chunk)) await once(out, 'drain');
  }
  if (rest.trim().length > 0) throw new Error(`products/stream ended in the middle of a line`);
  out.end();
  await finished(out);
  return { records, bytes };
}

export function measureStreamFloor(args: StreamFloorArgs): Promise<StreamFloorResult> {
  return measure(() => streamToJsonl(args));
}

scenarioMain(import.meta.url, measureStreamFloor);
