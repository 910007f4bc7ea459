// Reads Iceberg tables with icebird, an independent reader (its own Avro decoder, hyparquet for
// the Parquet), as an engine would: from `metadata/version-hint.text` or a named metadata file.
// icebird fetches URLs; Node's fetch has no file: scheme, so while a read runs, file: URLs are
// answered from disk (whole files, status 200, as a server without range requests answers).
import { readFile } from 'node:fs/promises';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { icebergManifests, icebergMetadata, icebergRead } from 'icebird';

let depth = 0;
let original: typeof fetch | undefined;

/** Reads an object of a bucket for the reader (an S3 test server's client). */
export type ObjectReader = (bucket: string, key: string) => Promise<Uint8Array | undefined>;
let objects: ObjectReader | undefined;

/**
 * icebird turns s3://bucket/key into https://bucket.s3.amazonaws.com/key before fetching; with
 * an object reader given, those are answered from the test's S3 server instead of AWS.
 */
async function fetched(url: string): Promise<Uint8Array | undefined> {
  if (url.startsWith('file:')) return readFile(fileURLToPath(url)).catch(() => undefined);
  const s3 = /^https:\/\/([^/]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url);
  if (s3 && objects) return objects(s3[1]!, decodeURIComponent(s3[2]!));
  return undefined;
}

async function withFileFetch<T>(read: () => Promise<T>, reader?: ObjectReader): Promise<T> {
  objects = reader;
  if (depth++ === 0) {
    original = globalThis.fetch;
    const next = original;
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!url.startsWith('file:') && !/\.s3\.amazonaws\.com\//.test(url)) return next(input, init);
      const bytes = await fetched(url);
      if (!bytes) return new Response('not found', { status: 404 });
      const body = init?.method === 'HEAD' ? null : new Uint8Array(bytes);
      return new Response(body, { status: 200, headers: { 'content-length': String(bytes.length) } });
    }) as typeof fetch;
  }
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
): Promise<{ files: string[]; currentRunId?: string; state?: string; snapshots: number }> {
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
      snapshots: metadata.snapshots?.length ?? 0,
    };
  });
}
