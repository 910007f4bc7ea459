// The format side of one output part: turns items (records, or shaped Parquet
// rows) into bytes on a ByteDestination. JSONL and Parquet implement it; the
// rotation/partition logic (rotation.ts) only sees this interface.
import type { ByteDestination } from './byte-destination.js';

export interface PartEncoder<Item> {
  /** Items written to this part. */
  readonly rows: number;
  /** Bytes this part holds so far, for maxBytes rotation (see each encoder for how exact). */
  readonly bytes: number;
  /** Adds one item; returns a promise when the destination asks the caller to wait. */
  write(item: Item): void | Promise<void>;
  /** Writes the trailing bytes (gzip trailer, Parquet footer); the destination is not committed. */
  end(): Promise<void>;
  /** Drops buffered state after a failure. */
  destroy(): void;
}

/** Builds the encoder and the destination of each new part. */
export interface PartFactory<Item> {
  /** Opens the destination for `location` (a temp file, an upload, stdout). */
  openDestination(location: string): Promise<ByteDestination> | ByteDestination;
  createEncoder(destination: ByteDestination): PartEncoder<Item>;
}
