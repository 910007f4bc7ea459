// The positions beside the merge state of an Iceberg `current/` table (`_table/positions-<run>.bin.gz`):
// for every frame of the state, in the same key order, the data file and the position of that key's
// row, with the snapshot's data files (their rows and how many are deleted) and delete files (which
// data files they name). The merge state stays the one source of each key's row; this says where
// the row is, so a run writes position deletes without reading a data file (delta-files.ts).
// Why a file of its own and not two more values in each state frame: an unchanged key's frame is
// copied as it arrived, without decoding it again, and its position rarely changes.
import { gunzipSync, gzipSync } from 'node:zlib';
import { SinkError } from '../../errors.js';

/** A data file of the snapshot: `rows` it holds, `deleted` of them named by delete files. */
export interface DeltaDataFile {
  /** Relative to the table's root. */
  path: string;
  rows: number;
  bytes: number;
  deleted: number;
}

/** A position-delete file of the snapshot and the data files it names (relative paths). */
export interface DeltaDeleteFile {
  path: string;
  rows: number;
  bytes: number;
  refs: string[];
}

export interface MergePositions {
  /** What the rows were written as (schema hash, timestamps): positions of other rows mean nothing. */
  filesKey: string;
  files: DeltaDataFile[];
  deleteFiles: DeltaDeleteFile[];
  /** Two values per state frame: index into `files`, position in that file. */
  positions: Uint32Array;
}

const VERSION = 1;

/** The file's bytes: gzip of [header length (u32 LE), header JSON, positions (u32 LE pairs)]. */
export function encodePositions(p: MergePositions): Buffer {
  const header = Buffer.from(
    JSON.stringify({ version: VERSION, filesKey: p.filesKey, files: p.files, deleteFiles: p.deleteFiles }),
  );
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  const positions = Buffer.alloc(p.positions.length * 4);
  for (let i = 0; i < p.positions.length; i++) positions.writeUInt32LE(p.positions[i]!, i * 4);
  return gzipSync(Buffer.concat([length, header, positions]), { level: 1 });
}

/** The positions a file holds, checked against the rows the snapshot says it has; `where` names it in errors. */
export function decodePositions(bytes: Uint8Array, rows: number, where: string): MergePositions {
  try {
    const raw = gunzipSync(bytes);
    const headerLength = raw.readUInt32LE(0);
    const header = JSON.parse(raw.subarray(4, 4 + headerLength).toString('utf8')) as Omit<
      MergePositions,
      'positions'
    > & {
      version: number;
    };
    if (header.version !== VERSION) throw new Error(`version ${header.version}, this toolkit reads ${VERSION}`);
    const body = raw.subarray(4 + headerLength);
    if (body.length !== rows * 8) throw new Error(`${body.length / 8} positions for ${rows} rows`);
    const positions = new Uint32Array(rows * 2);
    for (let i = 0; i < positions.length; i++) {
      const value = body.readUInt32LE(i * 4);
      if (i % 2 === 0 && value >= header.files.length)
        throw new Error(`a row names file #${value} of ${header.files.length}`);
      positions[i] = value;
    }
    return { filesKey: header.filesKey, files: header.files, deleteFiles: header.deleteFiles, positions };
  } catch (err) {
    throw new SinkError(
      `table: cannot read the row positions ${where} (${(err as Error).message}); restore it, or run once with --full-refresh`,
      { code: 'table.state', cause: err },
    );
  }
}
