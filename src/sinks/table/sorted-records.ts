// Records ordered by key without holding them: the external sort and the framed files
// behind the `table` sink's merge (table-sink.ts).
//
// Frames are `u32 length + v8.serialize(value)`: v8's format keeps what JSON loses (bigint
// codes above 2^53, undefined vs null) and costs about the same to write and read.
// The incoming records are serialized as they arrive, kept as bytes (off the JS heap) until
// `bufferBytes` is reached, sorted by key and spilled to a run file; the runs are then merged
// with a heap, so memory holds one buffer while collecting and one read chunk per run while
// merging, whatever the extract's size.
//
// A record is serialized once, as the `[key, record]` body of a state frame (table-sink.ts):
// the sort carries those bytes through its runs and merge passes without decoding them (only
// the key is decoded, from its own small serialization), so the merge can compare a record
// with the previous version's as bytes and copy either into the next state file as it is.
import { open, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { deserialize, Deserializer, serialize } from 'node:v8';

export type Key = string | number | bigint;

/**
 * One total order over keys: numbers and bigints by value, strings by UTF-16 code units
 * (the order of `<`; for the ASCII ids of the catalog the same as DuckDB's), numbers before
 * strings. The previous snapshot's state file was written in this order; merging relies on it.
 */
export function compareKeys(a: Key, b: Key): number {
  const sa = typeof a === 'string';
  const sb = typeof b === 'string';
  if (sa !== sb) return sa ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The largest frame body a reader accepts (one record's serialization; a product is a few KB).
 * A length beyond it is a damaged or planted file: without the limit a reader would buffer up to
 * 4 GiB waiting for the frame's end, copying what it has at every chunk.
 */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** A frame announces a body longer than MAX_FRAME_BYTES. */
export class FrameLimitError extends Error {
  readonly code = 'table.state_limit';
  constructor(length: number, limit: number) {
    super(`a frame announces ${length} bytes, over the limit of ${limit} bytes per record`);
  }
}

/** The frame of an already serialized value. */
export function frameBody(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32LE(body.length, 0);
  out.set(body, 4);
  return out;
}

/**
 * Splits a byte stream into frames of `header` fixed bytes and what `length` reads from the
 * header follows it, and hands each to `decode`; the views it gets stay valid after it
 * returns (a later chunk never overwrites them).
 */
async function* splitFrames<T>(
  chunks: AsyncIterable<Buffer> | Readable,
  header: number,
  length: (buffer: Buffer, at: number) => number,
  decode: (buffer: Buffer, at: number, end: number) => T,
): AsyncGenerator<T> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let offset = 0;
    while (pending.length - offset >= header) {
      const bodyLength = length(pending, offset);
      if (bodyLength > MAX_FRAME_BYTES) throw new FrameLimitError(bodyLength, MAX_FRAME_BYTES);
      const end = offset + header + bodyLength;
      if (end > pending.length) break;
      yield decode(pending, offset, end);
      offset = end;
    }
    pending = offset === pending.length ? Buffer.alloc(0) : pending.subarray(offset);
  }
  if (pending.length > 0) throw new Error(`a framed file ends inside a record (${pending.length} bytes left over)`);
}

/** The serialized values of a framed byte stream (a file, a gunzip, an S3 body), not decoded. */
export function readFrameBodies(chunks: AsyncIterable<Buffer> | Readable): AsyncGenerator<Buffer> {
  return splitFrames(
    chunks,
    4,
    (b, at) => b.readUInt32LE(at),
    (b, at, end) => b.subarray(at + 4, end),
  );
}

/** Reads a run file chunk by chunk (64 KiB), frame by frame. */
async function* fileChunks(file: string): AsyncGenerator<Buffer> {
  const handle: FileHandle = await open(file, 'r');
  try {
    for (;;) {
      const buffer = Buffer.allocUnsafe(64 * 1024);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}

/**
 * An entry of the sort: the key, the arrival order (the later wins among equal keys), the key's
 * own serialization (what run files carry to compare without decoding the body) and the body,
 * `v8.serialize([key, record])`.
 */
interface Entry {
  key: Key;
  ordinal: number;
  keyBytes: Uint8Array;
  body: Uint8Array;
}

function compareEntries(a: Entry, b: Entry): number {
  return compareKeys(a.key, b.key) || a.ordinal - b.ordinal;
}

/** A record out of the sort: its key and its `[key, record]` serialization, decoded on demand. */
export class SortedRecord {
  constructor(
    readonly key: Key,
    /** `v8.serialize([key, record])`: the body of the record's state frame. */
    readonly body: Uint8Array,
  ) {}

  get record(): Record<string, unknown> {
    return (deserialize(this.body) as [Key, Record<string, unknown>])[1];
  }
}

/**
 * The key of a `[key, record]` body (or `[key, record, ...lineage]`, table-lineage.ts) without
 * decoding the record: the serialized array's header is the tag `A` and its length, then the key (a string, number or bigint, a few bytes). A read of
 * the whole body costs about 50 times more for a product; a body of another shape is decoded whole.
 */
export function keyOfBody(body: Uint8Array): Key {
  const reader = new Deserializer(body);
  if (reader.readHeader() && reader.readRawBytes(1)[0] === 0x41 && reader.readUint32() >= 2) {
    const key = reader.readValue() as unknown;
    if (typeof key === 'string' || typeof key === 'number' || typeof key === 'bigint') return key;
  }
  return (deserialize(body) as [Key, unknown])[0];
}

/**
 * Two key-ordered streams of records as one, each key once; where both hold a key, `b`'s record
 * wins. `from` tells where a key was: `a`, `b` or `both`.
 */
export async function* mergeSorted(
  a: AsyncIterable<SortedRecord>,
  b: AsyncIterable<SortedRecord> | undefined,
): AsyncGenerator<{ next: SortedRecord; from: 'a' | 'b' | 'both' }> {
  if (!b) {
    for await (const next of a) yield { next, from: 'a' };
    return;
  }
  const ai = a[Symbol.asyncIterator]();
  const bi = b[Symbol.asyncIterator]();
  let x = await ai.next();
  let y = await bi.next();
  while (!x.done || !y.done) {
    const order = x.done ? 1 : y.done ? -1 : compareKeys(x.value.key, y.value.key);
    if (order < 0) {
      yield { next: x.value!, from: 'a' };
      x = await ai.next();
    } else {
      yield { next: y.value!, from: order === 0 ? 'both' : 'b' };
      if (order === 0) x = await ai.next();
      y = await bi.next();
    }
  }
}

/** A run file's frame: `u32 key bytes, u32 body bytes, f64 ordinal`, the key's serialization, the body. */
const RUN_HEADER = 16;

function runFrame(entry: Entry): Buffer {
  const out = Buffer.allocUnsafe(RUN_HEADER + entry.keyBytes.length + entry.body.length);
  out.writeUInt32LE(entry.keyBytes.length, 0);
  out.writeUInt32LE(entry.body.length, 4);
  out.writeDoubleLE(entry.ordinal, 8);
  out.set(entry.keyBytes, RUN_HEADER);
  out.set(entry.body, RUN_HEADER + entry.keyBytes.length);
  return out;
}

function readRun(file: string): AsyncGenerator<Entry> {
  return splitFrames(
    fileChunks(file),
    RUN_HEADER,
    (b, at) => b.readUInt32LE(at) + b.readUInt32LE(at + 4),
    (b, at) => {
      const keyAt = at + RUN_HEADER;
      const bodyAt = keyAt + b.readUInt32LE(at);
      const keyBytes = b.subarray(keyAt, bodyAt);
      return {
        key: deserialize(keyBytes) as Key,
        ordinal: b.readDoubleLE(at + 8),
        keyBytes,
        body: b.subarray(bodyAt, bodyAt + b.readUInt32LE(at + 4)),
      };
    },
  );
}

/**
 * Collects records, spilling sorted runs into `dir`; `sorted()` yields each key once (its last
 * arrival), and may be read again (the table sink reads it twice when it checks deletes).
 */
export class ExternalSort {
  readonly #dir: string;
  readonly #bufferBytes: number;
  #buffer: Entry[] = [];
  #buffered = 0;
  #ordinal = 0;
  readonly #runs: string[] = [];
  /** The runs left once the merge passes are done (at most MAX_FAN_IN); set by the first `sorted()`. */
  #merged: Promise<string[]> | undefined;

  /** Called every PROGRESS_EVERY records the merge passes write (they run before `sorted()` yields its first record). */
  readonly #onProgress: ((written: number) => void) | undefined;

  constructor(dir: string, bufferBytes: number, onProgress?: (written: number) => void) {
    this.#dir = dir;
    this.#bufferBytes = bufferBytes;
    this.#onProgress = onProgress;
  }

  get count(): number {
    return this.#ordinal;
  }

  async add(key: Key, record: Record<string, unknown>): Promise<void> {
    if (this.#merged) throw new Error('ExternalSort: add() after sorted()');
    const entry: Entry = { key, ordinal: this.#ordinal++, keyBytes: serialize(key), body: serialize([key, record]) };
    this.#buffer.push(entry);
    this.#buffered += RUN_HEADER + entry.keyBytes.length + entry.body.length;
    if (this.#buffered >= this.#bufferBytes) await this.#spill();
  }

  async #spill(): Promise<void> {
    if (this.#buffer.length === 0) return;
    const buffer = this.#buffer;
    this.#buffer = [];
    this.#buffered = 0;
    buffer.sort(compareEntries);
    const file = path.join(this.#dir, `run-${String(this.#runs.length).padStart(5, '0')}.v8`);
    await writeEntries(file, buffer);
    this.#runs.push(file);
  }

  /** Spills the buffer and merges the runs in passes of at most MAX_FAN_IN, so the open files stay few with a small buffer. */
  async #merge(): Promise<string[]> {
    await this.#spill();
    let runs = this.#runs.splice(0);
    let pass = 0;
    let written = 0;
    while (runs.length > MAX_FAN_IN) {
      const next: string[] = [];
      for (let i = 0; i < runs.length; i += MAX_FAN_IN) {
        const group = runs.slice(i, i + MAX_FAN_IN);
        if (group.length === 1) {
          next.push(group[0]!);
          continue;
        }
        const file = path.join(this.#dir, `merge-${pass}-${String(next.length).padStart(5, '0')}.v8`);
        await writeEntries(file, mergeRuns(group), () => {
          if (++written % PROGRESS_EVERY === 0) this.#onProgress?.(written);
        });
        await Promise.all(group.map((f) => unlink(f)));
        next.push(file);
      }
      runs = next;
      pass++;
    }
    return runs;
  }

  /**
   * Every key once, in key order, with the record that arrived last for it. `onReplaced` is told
   * of each earlier arrival a later one of the same key replaced (their `[key, record]` bodies).
   */
  async *sorted(onReplaced?: (earlier: Uint8Array, later: Uint8Array) => void): AsyncGenerator<SortedRecord> {
    const runs = await (this.#merged ??= this.#merge());
    let held: Entry | undefined;
    for await (const entry of mergeRuns(runs)) {
      if (held && compareKeys(held.key, entry.key) !== 0) yield new SortedRecord(held.key, held.body);
      else if (held) onReplaced?.(held.body, entry.body);
      held = entry;
    }
    if (held) yield new SortedRecord(held.key, held.body);
  }
}

const MAX_FAN_IN = 64;
const PROGRESS_EVERY = 1024;

/** The entries of sorted run files, in (key, arrival) order. */
async function* mergeRuns(files: readonly string[]): AsyncGenerator<Entry> {
  const sources = files.map((file) => readRun(file)[Symbol.asyncIterator]());
  const heap = new MinHeap<{ entry: Entry; source: number }>((a, b) => compareEntries(a.entry, b.entry));
  for (let s = 0; s < sources.length; s++) {
    const next = await sources[s]!.next();
    if (!next.done) heap.push({ entry: next.value, source: s });
  }
  while (heap.size > 0) {
    const top = heap.pop()!;
    const next = await sources[top.source]!.next();
    if (!next.done) heap.push({ entry: next.value, source: top.source });
    yield top.entry;
  }
}

/** Writes entries as run frames, in batches of about 1 MiB: one syscall per record costs more than the sort. */
async function writeEntries(
  file: string,
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  onEntry?: () => void,
): Promise<void> {
  const handle = await open(file, 'wx');
  try {
    let batch: Buffer[] = [];
    let size = 0;
    for await (const entry of entries) {
      onEntry?.();
      const bytes = runFrame(entry);
      batch.push(bytes);
      size += bytes.length;
      if (size >= 1 << 20) {
        await handle.write(Buffer.concat(batch, size));
        batch = [];
        size = 0;
      }
    }
    if (size > 0) await handle.write(Buffer.concat(batch, size));
  } finally {
    await handle.close();
  }
}

class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #less: (a: T, b: T) => number;

  constructor(compare: (a: T, b: T) => number) {
    this.#less = compare;
  }

  get size(): number {
    return this.#items.length;
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#less(items[i]!, items[parent]!) >= 0) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.#less(items[l]!, items[m]!) < 0) m = l;
        if (r < items.length && this.#less(items[r]!, items[m]!) < 0) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}
