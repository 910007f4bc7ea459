// Reads Iceberg tables with icebird, an independent reader (its own Avro decoder, hyparquet for
// the Parquet), as an engine would: from `metadata/version-hint.text` or a named metadata file.
// icebird fetches URLs. Node's fetch has no file: scheme, and icebird turns s3://bucket/key into
// https://bucket.s3.amazonaws.com/key; `icebirdFetch` answers both from the test's own files and
// S3 server (Range requests with 206, as S3 does), so a read never leaves the machine.
import { readFile } from 'node:fs/promises';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { icebergManifests, icebergMetadata, icebergRead } from 'icebird';

/** Reads an object of a bucket for the reader (an S3 test server's client or store). */
export type ObjectReader = (bucket: string, key: string) => Promise<Uint8Array | undefined>;

const S3_URL = /^https:\/\/([^/]+)\.s3\.amazonaws\.com\/(.*)$/;

/**
 * A fetch for icebird: file: URLs from disk, S3 URLs through `objects`; any other URL goes to
 * `otherwise`, or is refused when none is given.
 */
export function icebirdFetch(objects?: ObjectReader, otherwise?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const s3 = S3_URL.exec(url);
    if (!url.startsWith('file:') && !(s3 && objects)) {
      if (otherwise) return otherwise(input, init);
      throw new Error(`the test fetch serves file: and S3 URLs only, not ${url}`);
    }
    const bytes = s3
      ? await objects!(s3[1]!, decodeURIComponent(s3[2]!))
      : await readFile(fileURLToPath(url)).catch(() => undefined);
    if (!bytes) return new Response(null, { status: 404 });
    if (init?.method === 'HEAD') return new Response(null, { headers: { 'content-length': String(bytes.length) } });
    const m = /^bytes=(\d+)-(\d*)$/.exec(new Headers(init?.headers).get('Range') ?? '');
    if (!m) return new Response(new Uint8Array(bytes), { status: 200 });
    const start = Number(m[1]);
    const end = m[2] ? Number(m[2]) + 1 : bytes.length;
    return new Response(new Uint8Array(bytes.subarray(start, end)), {
      status: 206,
      headers: { 'content-range': `bytes ${start}-${end - 1}/${bytes.length}` },
    });
  };
}

let depth = 0;
let original: typeof fetch | undefined;

/** Runs `read` with icebirdFetch as the global fetch (other URLs still reach the network stack). */
async function withFileFetch<T>(read: () => Promise<T>, reader?: ObjectReader): Promise<T> {
  if (depth++ === 0) original = globalThis.fetch;
  globalThis.fetch = icebirdFetch(reader, original);
  try {
    return await read();
  } finally {
    if (--depth === 0) globalThis.fetch = original!;
  }
}

/**
 * The table's rows as icebird reads them; `table` is a folder or an s3:// URL (read through
 * `options.objects`); `metadataFileName` (`v3.metadata.json`) reads that version.
 */
export async function readIceberg(
  table: string,
  options: { metadataFileName?: string; objects?: ObjectReader } = {},
): Promise<Array<Record<string, unknown>>> {
  const tableUrl = table.startsWith('s3://') ? table : pathToFileURL(table).href;
  return withFileFetch(
    () =>
      icebergRead({ tableUrl, ...(options.metadataFileName ? { metadataFileName: options.metadataFileName } : {}) }),
    options.objects,
  );
}

/** The table's metadata as icebird reads it (the version the hint names, or `metadataFileName`). */
export async function readIcebergMetadata(
  tableDir: string,
  options: { metadataFileName?: string } = {},
): Promise<Record<string, any>> {
  const tableUrl = pathToFileURL(tableDir).href;
  return withFileFetch(() =>
    icebergMetadata({ tableUrl, ...(options.metadataFileName ? { metadataFileName: options.metadataFileName } : {}) }),
  );
}

/**
 * What a table references, relative to its folder, as icebird reads it: the version hint, the
 * metadata file it names and those in its metadata log, every kept snapshot's manifest list, its
 * manifests and their live data files (ADDED or EXISTING; a DELETED entry is a tombstone).
 * Also the current snapshot's run id and state (the table sink's summary keys).
 */
export async function icebergReferences(
  tableDir: string,
): Promise<{ files: string[]; currentRunId?: string; state?: string; positions?: string; snapshots: number }> {
  const tableUrl = pathToFileURL(tableDir).href;
  const rel = (url: string) => {
    if (!url.startsWith(`${tableUrl}/`)) throw new Error(`${url} is not under ${tableUrl}`);
    return url.slice(tableUrl.length + 1);
  };
  return withFileFetch(async () => {
    const hint = (await readFile(`${tableDir}/metadata/version-hint.text`, 'utf8')).trim();
    const metadata = await icebergMetadata({ tableUrl });
    const files = new Set<string>(['metadata/version-hint.text', `metadata/v${hint}.metadata.json`]);
    for (const log of metadata['metadata-log'] ?? []) files.add(rel(log['metadata-file']));
    for (const snapshot of metadata.snapshots ?? []) {
      files.add(rel(snapshot['manifest-list']!));
      const manifests = await icebergManifests({ ...metadata, 'current-snapshot-id': snapshot['snapshot-id'] });
      for (const manifest of manifests) {
        files.add(rel(manifest.url));
        for (const entry of manifest.entries) if (entry.status !== 2) files.add(rel(entry.data_file.file_path));
      }
    }
    const current = metadata.snapshots?.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
    const summary = current?.summary as Record<string, string> | undefined;
    return {
      files: [...files].sort(),
      currentRunId: summary?.['catalog-streams.run-id'],
      state: summary?.['catalog-streams.state'],
      positions: summary?.['catalog-streams.positions'],
      snapshots: metadata.snapshots?.length ?? 0,
    };
  });
}
