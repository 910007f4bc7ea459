// Incremental state: the cursor an incremental run starts from (`updatedSince`)
// and facts about the last successful run. Stored in a local file (written to a
// temporary name and renamed, so a crash never leaves half a file) or in an S3
// object (`s3://bucket/key`, one PUT, which S3 makes atomic). It is written only
// after every sink has committed; a failed run leaves the previous cursor.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, CatalogStreamsError } from '../errors.js';

export const PipelineState = z.looseObject({
  version: z.literal(1),
  pipeline: z.string(),
  /** Unix seconds: the next run asks for `updatedSince: {from: cursor}`. */
  cursor: z.int().nonnegative(),
  updatedAt: z.string(),
  lastRun: z
    .looseObject({
      runId: z.string(),
      startedAt: z.string(),
      finishedAt: z.string(),
      records: z.int().nonnegative(),
      source: z.string(),
    })
    .optional(),
});
export type PipelineState = z.infer<typeof PipelineState>;

export interface StateStore {
  /** `path/to/file.json` or `s3://bucket/key`. */
  readonly location: string;
  read(): Promise<PipelineState | undefined>;
  write(state: PipelineState): Promise<void>;
}

/** The smallest S3 surface the store needs, so callers pass any configured S3 client. */
export interface S3ObjectIO {
  getObject(bucket: string, key: string): Promise<string | undefined>;
  putObject(bucket: string, key: string, body: string): Promise<void>;
}

export function openStateStore(location: string, opts: { baseDir: string; s3?: () => S3ObjectIO }): StateStore {
  const s3 = /^s3:\/\/([^/]+)\/(.+)$/.exec(location);
  if (s3) {
    if (!opts.s3) throw new ConfigError(`state.path: ${location} is on S3 but no S3 client is available`, { path: 'state.path' });
    return new S3StateStore(location, s3[1]!, s3[2]!, opts.s3());
  }
  if (location.startsWith('s3:')) throw new ConfigError(`state.path: "${location}" is not of the form s3://bucket/key`, { path: 'state.path' });
  return new FileStateStore(path.resolve(opts.baseDir, location));
}

function parseState(text: string, location: string): PipelineState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CatalogStreamsError('state.corrupt', `state ${location} is not valid JSON; fix it, or delete it and run with --full-refresh`);
  }
  const parsed = PipelineState.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CatalogStreamsError('state.corrupt', `state ${location}: ${issue.path.join('.') || '(root)'}: ${issue.message}; fix it, or delete it and run with --full-refresh`);
  }
  return parsed.data;
}

class FileStateStore implements StateStore {
  constructor(readonly location: string) {}

  async read(): Promise<PipelineState | undefined> {
    let text: string;
    try {
      text = await readFile(this.location, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CatalogStreamsError('state.read', `cannot read state ${this.location}: ${(err as Error).message}`, { cause: err });
    }
    return parseState(text, this.location);
  }

  async write(state: PipelineState): Promise<void> {
    // A fresh temp name beside the file (same file system, so the rename is atomic).
    const tmp = `${this.location}.${process.pid}.${randomBytes(3).toString('hex')}.tmp`;
    try {
      await mkdir(path.dirname(this.location), { recursive: true });
      await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { flush: true });
      await rename(tmp, this.location);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw new CatalogStreamsError('state.write', `cannot write state ${this.location}: ${(err as Error).message}`, { cause: err });
    }
  }
}

class S3StateStore implements StateStore {
  constructor(
    readonly location: string,
    private readonly bucket: string,
    private readonly key: string,
    private readonly io: S3ObjectIO,
  ) {}

  async read(): Promise<PipelineState | undefined> {
    const text = await this.io.getObject(this.bucket, this.key);
    return text === undefined ? undefined : parseState(text, this.location);
  }

  async write(state: PipelineState): Promise<void> {
    await this.io.putObject(this.bucket, this.key, `${JSON.stringify(state, null, 2)}\n`);
  }
}
