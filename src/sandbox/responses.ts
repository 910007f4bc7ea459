// Writing answers: JSON bodies in one `res.end(buffer)`, error bodies, and
// NDJSON streams written in batches that respect backpressure (a slow client
// holds the sandbox's memory flat instead of buffering a million lines).
// Stream faults (cut, malformed line, error line, short stream) happen here.
import type { ServerResponse } from 'node:http';
import type { ApiError } from './api-errors.js';
import type { StreamPlan } from './faults.js';

export const NDJSON_CONTENT_TYPE = 'application/x-json-stream';

/**
 * Reusable encoding buffers. A 1M-product extract encodes some 6 GB; taking
 * buffers from here and giving them back once the socket has taken their
 * bytes (the write callback) avoids allocating and freeing that much, which
 * fragments the native heap and grows RSS.
 */
export class BufferPool {
  readonly #free: ArrayBuffer[] = [];

  constructor(
    readonly size: number,
    private readonly keep = 16,
  ) {}

  take(minimum: number): Buffer {
    if (minimum > this.size) return Buffer.allocUnsafeSlow(minimum);
    const reused = this.#free.pop();
    return reused ? Buffer.from(reused) : Buffer.allocUnsafeSlow(this.size);
  }

  /** Gives a chunk's memory back; call once, after nothing reads the chunk any more. */
  give(chunk: Buffer): void {
    const memory = chunk.buffer as ArrayBuffer;
    if (memory.byteLength === this.size && chunk.byteOffset === 0 && this.#free.length < this.keep)
      this.#free.push(memory);
  }
}

const PAGE_BUFFERS = new BufferPool(1 << 20);
const STREAM_BUFFERS = new BufferPool(256 * 1024);

/**
 * Encodes many strings into a few large Buffers. Writing each record's text
 * straight into a Buffer avoids joining hundreds of records into one giant
 * string first, which costs as much again as building them.
 */
export class Utf8Chunks {
  readonly #done: Buffer[] = [];
  #buf: Buffer;
  #used = 0;

  constructor(readonly pool: BufferPool = PAGE_BUFFERS) {
    this.#buf = pool.take(pool.size);
  }

  write(text: string): void {
    // A UTF-16 code unit never takes more than 3 bytes in UTF-8.
    if (this.#used + text.length * 3 > this.#buf.length) {
      this.#done.push(this.#buf.subarray(0, this.#used));
      this.#buf = this.pool.take(text.length * 3);
      this.#used = 0;
    }
    this.#used += this.#buf.write(text, this.#used);
  }

  /** Chunks that are full, removed from the writer (for streaming them out). */
  takeFull(): Buffer[] {
    return this.#done.splice(0);
  }

  /** Every chunk, the last one included; the writer must not be used afterwards. */
  finish(): Buffer[] {
    const out = [...this.takeFull(), this.#buf.subarray(0, this.#used)];
    this.#used = 0;
    return out;
  }
}

/** Sends a JSON body given as encoded chunks, with its Content-Length, in one corked write. */
export function sendJsonChunks(
  res: ServerResponse,
  status: number,
  chunks: Buffer[],
  headers: Record<string, string> = {},
  pool?: BufferPool,
): void {
  const length = chunks.reduce((n, c) => n + c.length, 0);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(length),
    ...headers,
  });
  res.cork();
  for (const chunk of chunks) res.write(chunk, () => pool?.give(chunk));
  res.end();
  res.uncork();
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  sendJsonChunks(res, status, [Buffer.from(JSON.stringify(value))], headers);
}

export function sendError(res: ServerResponse, error: ApiError, headers: Record<string, string> = {}): void {
  sendJson(res, error.status, error.body(), headers);
}

/** A JSON body cut half-way and ended cleanly (chunked, no Content-Length): a truncated page. */
export function sendTruncatedJson(res: ServerResponse, chunks: Buffer[]): void {
  const body = Buffer.concat(chunks);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  res.end(body.subarray(0, Math.floor(body.length / 2)));
}

/** Resolves when the response can take more data, or when the client went away. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export interface StreamSource {
  total: number;
  /** JSON text of the record at stream position `index`. */
  recordJson(index: number): string;
}

/**
 * Writes `{"meta":{"total":N,"index":i},"result":{...}}\n` for every position,
 * applying the faults in `plan`. A failure while building a record becomes an
 * `{"error":...}` line, then the response ends (ARCHITECTURE.md, API rules).
 */
export async function writeNdjson(res: ServerResponse, source: StreamSource, plan: StreamPlan): Promise<void> {
  const { total } = source;
  res.writeHead(200, { 'content-type': NDJSON_CONTENT_TYPE });
  const last = plan.sendOnly ?? total;
  const out = new Utf8Chunks(STREAM_BUFFERS);
  const release = (chunk: Buffer) => () => STREAM_BUFFERS.give(chunk);
  const flush = async (chunks: Buffer[]) => {
    for (const chunk of chunks) if (!res.write(chunk, release(chunk))) await drained(res);
  };
  for (let index = 0; index < last; index++) {
    if (res.destroyed) return;
    if (plan.cutAfter === index) {
      // Abrupt end: what was written goes out, then the connection closes without
      // the chunked terminator, so the client sees a truncated body.
      res.cork();
      for (const chunk of out.finish()) if (chunk.length) res.write(chunk, release(chunk));
      res.flushHeaders();
      res.uncork();
      res.socket?.end();
      return;
    }
    if (plan.truncateAfter === index) {
      // A clean end of the chunked body in the middle of a line: what a proxy that gives up sends.
      const text = `{"meta":{"total":${total},"index":${index}},"result":${source.recordJson(index)}}`;
      out.write(text.slice(0, Math.floor(text.length / 2)));
      break;
    }
    let line: string;
    try {
      if (plan.errorAt === index) throw new Error(`injected failure at index ${index}`);
      line = `{"meta":{"total":${total},"index":${index}},"result":${source.recordJson(index)}}\n`;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      out.write(
        `${JSON.stringify({ error: { status: 500, code: 'internal_error', message: `the stream failed at index ${index}: ${message}` } })}\n`,
      );
      break;
    }
    if (plan.malformedAt === index) line = `${line.slice(0, Math.floor(line.length / 2))}\n`;
    out.write(line);
    const full = out.takeFull();
    if (full.length) await flush(full);
  }
  if (res.destroyed) return;
  const rest = out.finish();
  await flush(rest.slice(0, -1));
  const lastChunk = rest[rest.length - 1]!;
  res.end(lastChunk, release(lastChunk));
}
