// Partitions, rotation and part numbering, the same for every sink and format.
//
// - One open part per partition (the escaped `key={field}` values of a record); the
//   least recently used part is closed when more than `maxOpenPartitions` would be
//   open, which needs `{part}` in the template so the partition can continue in a new
//   part later (else the run fails with a clear error: the input would have to be
//   sorted by the partition field, or the limit raised).
// - A part is closed after the record that brings it to `maxRows` rows or
//   `maxBytes` bytes; the next record of that partition opens the next part.
// - Parts are numbered from 0 per partition, in the order they are opened.
// - `commitOnClose`: S3 objects become visible when their upload completes (the
//   manifest tells readers which ones to trust); local files are committed (renamed)
//   all together when the sink finishes, so a failed run leaves no file under a final name.
import type { OutputRecord } from '../../events.js';
import { ConfigError, SinkError } from '../../errors.js';
import type { ByteDestination } from './byte-destination.js';
import type { PartEncoder, PartFactory } from './part-encoder.js';
import type { PathTemplate } from './path-template.js';

export interface RotationOptions {
  maxRows?: number | undefined;
  maxBytes?: number | undefined;
  maxOpenPartitions: number;
}

interface Part<Item> {
  key: string;
  location: string;
  destination: ByteDestination;
  encoder: PartEncoder<Item>;
  state: 'open' | 'closing' | 'closed' | 'committed' | 'aborted';
  closing?: Promise<void>;
}

export interface PartitionedPartsOptions<Item> {
  sinkType: string;
  /** undefined: one fixed location (`-` for stdout) with neither partitions nor rotation. */
  template: PathTemplate | undefined;
  /** The option holding the template, for error messages (`path`, `key`). */
  templateOption: string;
  /** Maps a rendered template to the destination location (an absolute path, an S3 key). */
  locate(rendered: string): string;
  rotation: RotationOptions;
  factory: PartFactory<Item>;
  commitOnClose: boolean;
  /** Called when an output is committed under its final name. */
  onCommit(output: OutputRecord, destination: ByteDestination): void;
}

/** A part is closed after the item that brings it to `maxRows` rows or `maxBytes` bytes. */
export function partIsFull(
  encoder: Pick<PartEncoder<unknown>, 'rows' | 'bytes'>,
  rotation: Pick<RotationOptions, 'maxRows' | 'maxBytes'>,
): boolean {
  const { maxRows, maxBytes } = rotation;
  return (maxRows !== undefined && encoder.rows >= maxRows) || (maxBytes !== undefined && encoder.bytes >= maxBytes);
}

/** An opened part of `SequentialParts`: what it was written to and its encoder. */
export interface SequentialPart<Item> {
  encoder: Pick<PartEncoder<Item>, 'rows' | 'bytes' | 'write' | 'end'>;
}

/**
 * The parts of one output without partitions, numbered from 0 in the order they are opened and
 * rotated as `PartitionedParts` rotates (the table's snapshot and changes files): the caller opens
 * each part (names it, stages its file), this class decides when.
 */
export class SequentialParts<Item, P extends SequentialPart<Item>> {
  readonly files: P[] = [];
  #current: P | undefined;
  readonly #open: (part: number) => Promise<P>;
  readonly #rotation: Pick<RotationOptions, 'maxRows' | 'maxBytes'>;

  constructor(open: (part: number) => Promise<P>, rotation: Pick<RotationOptions, 'maxRows' | 'maxBytes'>) {
    this.#open = open;
    this.#rotation = rotation;
  }

  async write(item: Item): Promise<void> {
    if (!this.#current) {
      this.#current = await this.#open(this.files.length);
      this.files.push(this.#current);
    }
    const pending = this.#current.encoder.write(item);
    if (pending) await pending;
    if (partIsFull(this.#current.encoder, this.#rotation)) {
      const full = this.#current;
      this.#current = undefined;
      await full.encoder.end();
    }
  }

  /** Ends the open part; with `atLeastOne`, writes an empty part (a Parquet file's schema) when no item came. */
  async end(atLeastOne: boolean): Promise<void> {
    if (this.files.length === 0 && atLeastOne) {
      this.#current = await this.#open(0);
      this.files.push(this.#current);
    }
    const open = this.#current;
    this.#current = undefined;
    await open?.encoder.end();
  }
}

export class PartitionedParts<Item> {
  readonly #options: PartitionedPartsOptions<Item>;
  /** Open parts by partition key, least recently used first. */
  readonly #open = new Map<string, Part<Item>>();
  readonly #all: Part<Item>[] = [];
  readonly #locations = new Set<string>();
  readonly #nextPart = new Map<string, number>();
  readonly #partitioned: boolean;
  #aborted = false;
  /** Parts being opened: abort() waits for them, so a temp file opened during an abort is gone when it returns. */
  readonly #opening = new Set<Promise<unknown>>();

  constructor(options: PartitionedPartsOptions<Item>) {
    const { template, rotation, templateOption } = options;
    if (template && !template.hasPart && (rotation.maxRows !== undefined || rotation.maxBytes !== undefined)) {
      const suggestion = template.source.replace(/(\.[^./]+(?:\.gz)?)?$/, (ext) => `-{part}${ext}`);
      throw new ConfigError(
        `${templateOption} "${template.source}" has no {part}, but maxRows/maxBytes rotation writes several parts; use e.g. "${suggestion}"`,
        { path: templateOption },
        { code: 'config.template' },
      );
    }
    this.#options = options;
    this.#partitioned = !!template && template.fields.length > 0;
  }

  /** Writes one item into the part of its partition, opening/rotating parts as needed. */
  write(partitionValues: readonly string[], item: Item): void | Promise<void> {
    const key = this.#partitioned ? partitionValues.join('\u0000') : '';
    const part = this.#open.get(key);
    if (!part) return this.#openAndWrite(key, partitionValues, item);
    if (this.#partitioned && this.#open.size > 1) {
      // Move to the most recently used end.
      this.#open.delete(key);
      this.#open.set(key, part);
    }
    const pending = part.encoder.write(item);
    if (pending) return pending.then(() => this.#rotateIfFull(part));
    return this.#rotateIfFull(part);
  }

  async #openAndWrite(key: string, partitionValues: readonly string[], item: Item): Promise<void> {
    if (this.#open.size >= this.#options.rotation.maxOpenPartitions) {
      const [oldest] = this.#open.values();
      if (!this.#options.template?.hasPart) {
        throw new SinkError(
          `more than ${this.#options.rotation.maxOpenPartitions} partitions are open at once (maxOpenPartitions) and ` +
            `${this.#options.templateOption} "${this.#options.template?.source}" has no {part} to continue a closed partition in a new file; ` +
            `add {part}, raise maxOpenPartitions, or sort the input by the partition field`,
          { code: 'sink.partitions' },
        );
      }
      await this.#close(oldest!);
    }
    const part = await this.#openPart(key, partitionValues);
    const pending = part.encoder.write(item);
    if (pending) await pending;
    await this.#rotateIfFull(part);
  }

  /** Opens a part even when no item arrived (an empty output for an unpartitioned path). */
  async openEmpty(): Promise<void> {
    if (this.#all.length === 0) await this.#openPart('', []);
  }

  async #openPart(key: string, partitionValues: readonly string[]): Promise<Part<Item>> {
    const { template, factory, locate } = this.#options;
    const number = this.#nextPart.get(key) ?? 0;
    this.#nextPart.set(key, number + 1);
    const location = locate(template ? template.render(partitionValues, number) : '-');
    if (this.#locations.has(location)) {
      throw new SinkError(`two outputs of this run would both be written to ${location}`, { code: 'sink.partitions' });
    }
    this.#locations.add(location);
    const opened = (async () => {
      const destination = await factory.openDestination(location);
      if (this.#aborted) {
        await destination.abort();
        throw new SinkError(`${this.#options.sinkType} sink was aborted`, { code: 'sink.aborted' });
      }
      return destination;
    })();
    this.#opening.add(opened);
    let destination: Awaited<typeof opened>;
    try {
      destination = await opened;
    } finally {
      this.#opening.delete(opened);
    }
    const part: Part<Item> = { key, location, destination, encoder: factory.createEncoder(destination), state: 'open' };
    this.#open.set(key, part);
    this.#all.push(part);
    return part;
  }

  #rotateIfFull(part: Part<Item>): void | Promise<void> {
    if (partIsFull(part.encoder, this.#options.rotation)) return this.#close(part);
  }

  #close(part: Part<Item>): Promise<void> {
    this.#open.delete(part.key);
    part.state = 'closing';
    part.closing = (async () => {
      await part.encoder.end();
      if (this.#options.commitOnClose) {
        await this.#commit(part);
      } else {
        await part.destination.close?.();
        part.state = 'closed';
      }
    })();
    return part.closing;
  }

  async #commit(part: Part<Item>): Promise<void> {
    await part.destination.commit();
    part.state = 'committed';
    this.#options.onCommit(
      {
        kind: part.destination.kind,
        location: part.destination.location,
        rows: part.encoder.rows,
        bytes: part.destination.bytes,
        sink: this.#options.sinkType,
      },
      part.destination,
    );
  }

  /** Closes every open part and commits every part not committed yet, in the order they were opened. */
  async finish(): Promise<void> {
    await this.closeAll();
    await this.commitAll();
  }

  /** Closes every open part: local files are complete under their temp names, S3 objects uploaded. */
  async closeAll(): Promise<void> {
    for (const part of [...this.#open.values()]) await this.#close(part);
  }

  /** Commits every closed part (renames local files to their final names), in the order they were opened. */
  async commitAll(): Promise<void> {
    for (const part of this.#all) {
      if (part.state === 'closed') await this.#commit(part);
    }
  }

  /**
   * Drops the closed parts not committed yet whose location `drop` picks (their temp files go):
   * what a fan-out region that failed wrote must not replace its published files
   * (shared/failed-regions.ts). Returns their locations, no longer among `locations`.
   */
  async discard(drop: (location: string) => boolean): Promise<string[]> {
    const dropped: string[] = [];
    for (const part of this.#all) {
      if (part.state !== 'closed' || !drop(part.location)) continue;
      await part.destination.abort(new Error('not published: its region failed'));
      part.state = 'aborted';
      this.#locations.delete(part.location);
      dropped.push(part.location);
    }
    return dropped;
  }

  /** Every location this run opened (committed or not). */
  get locations(): ReadonlySet<string> {
    return this.#locations;
  }

  /**
   * Removes everything this run wrote: open and closed parts are aborted (temp files
   * deleted, uploads aborted), committed ones revoked. Returns the cleanup failures.
   */
  async abort(reason: unknown): Promise<Error[]> {
    this.#aborted = true;
    const failures: Error[] = [];
    for (const part of this.#all) {
      if (part.state === 'aborted') continue;
      try {
        if (part.state === 'committed') {
          await part.destination.revoke?.();
          continue;
        }
        part.encoder.destroy();
        await part.destination.abort(reason);
        if (part.closing) await part.closing.catch(() => {});
        if ((part.state as Part<Item>['state']) === 'committed') await part.destination.revoke?.();
        part.state = 'aborted';
      } catch (err) {
        failures.push(err as Error);
      }
    }
    this.#open.clear();
    await Promise.allSettled([...this.#opening]);
    return failures;
  }
}
