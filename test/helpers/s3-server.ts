// A real S3-compatible server for tests: s3rver (npm) in its own Node process on
// 127.0.0.1, a free port, a fresh temp directory and one bucket.
//
// s3rver 3.7.1 lacks two operations the sink tests need, so the child adds them
// on top of s3rver's own on-disk layout (`<bucket>/._S3rver_uploads/<uploadId>/`):
//   - ListMultipartUploads (GET /bucket?uploads): s3rver answers NotImplemented;
//   - AbortMultipartUpload (DELETE /bucket/key?uploadId=...): s3rver answers MethodNotAllowed.
// It can also inject a fault: `failUploadPartFrom: n` answers 500 InternalError to every
// UploadPart with partNumber >= n (the SDK retries, then the upload fails half-way), and
// slow parts down: `uploadPartDelayMs` waits before storing each part; `failPutObjectKey` (a regular
// expression) answers 500 InternalError to every PutObject of a matching key (a manifest, say). s3rver ignores
// `If-None-Match: *` on PutObject; the child honours it as S3 does (412 PreconditionFailed when
// the key exists), serialized per key. Every request is
// logged (operation, key, part number, status) into `requests`.
//
// Credentials: s3rver knows one key pair, S3RVER/S3RVER. For SigV4 it checks only that the
// access key id exists (it does not verify signatures), so a wrong access key id is
// rejected (InvalidAccessKeyId, 403) but a wrong secret is not.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll } from 'vitest';

export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface S3TestServer {
  endpoint: string;
  bucket: string;
  /** s3rver's data directory. */
  directory: string;
  /** A client for assertions (path style, WHEN_REQUIRED checksums, S3RVER credentials). */
  client: S3Client;
  /** The S3 operations the server has logged so far, in order (may trail the responses a little). */
  readonly requests: ReadonlyArray<S3Request>;
  /** Every S3 operation answered before this call, in order (waits for the log to catch up). */
  requestLog(): Promise<ReadonlyArray<S3Request>>;
  /** Open multipart uploads in the bucket (ListMultipartUploads). */
  listMultipartUploads(): Promise<Array<{ key: string; uploadId: string }>>;
  /** Kills the server process at once (SIGKILL), keeping its directory. */
  kill(): void;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

export interface S3Request {
  op: string;
  key: string;
  partNumber?: number;
  status: number;
}

export interface S3TestServerOptions {
  bucket?: string;
  failUploadPartFrom?: number;
  uploadPartDelayMs?: number;
  /** PutObject of keys matching this regular expression answers 500 (after the SDK's retries, the put fails). */
  failPutObjectKey?: string;
  /** Reuse a directory (restart after kill()). */
  directory?: string;
}

// Runs in the child (CommonJS, like s3rver).
const CHILD_SCRIPT = String.raw`
const fs = require('fs');
const path = require('path');
const S3rver = require(process.env.S3RVER_MODULE);
const bucket = process.env.S3RVER_BUCKET;
const failFrom = Number(process.env.S3RVER_FAIL_PART_FROM || 0);
const partDelay = Number(process.env.S3RVER_PART_DELAY_MS || 0);
const failPut = process.env.S3RVER_FAIL_PUT_KEY ? new RegExp(process.env.S3RVER_FAIL_PUT_KEY) : undefined;
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory: process.env.S3RVER_DIR,
  silent: true,
  configureBuckets: [{ name: bucket }],
});
function operation(method, key, q, b) {
  if (b === '__log-marker__') return 'LogMarker';
  if (!key) return method === 'GET' ? ('uploads' in q ? 'ListMultipartUploads' : 'ListObjects') : method + 'Bucket';
  if (method === 'PUT') return q.uploadId ? 'UploadPart' : 'PutObject';
  if (method === 'POST') return 'uploads' in q ? 'CreateMultipartUpload' : 'CompleteMultipartUpload';
  if (method === 'DELETE') return q.uploadId ? 'AbortMultipartUpload' : 'DeleteObject';
  return method === 'HEAD' ? 'HeadObject' : 'GetObject';
}
server.middleware.unshift(async (ctx, next) => {
  let status;
  try {
    await next();
    status = ctx.status;
  } catch (err) {
    status = err.status || 500;
    throw err;
  } finally {
    const [, b, ...rest] = ctx.path.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const entry = { op: operation(ctx.method, key, ctx.query, b), key, status };
    if (ctx.query.partNumber) entry.partNumber = Number(ctx.query.partNumber);
    process.stdout.write(JSON.stringify(entry) + '\n');
  }
});
const xml = (s) => String(s).replace(/[<>&'"]/g, (c) => '&#' + c.charCodeAt(0) + ';');
const conditional = new Map();
const uploadsDir = () => server.store.getResourcePath(bucket, undefined, 'uploads');
function errorBody(code, message) {
  return '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code + '</Code><Message>' + xml(message) + '</Message></Error>';
}
server.middleware.splice(1, 0, async (ctx, next) => {
  const [, b, ...rest] = ctx.path.split('/');
  const key = decodeURIComponent(rest.join('/'));
  if (b === '__log-marker__') {
    ctx.status = 204;
    return;
  }
  if (b !== bucket) return next();
  if (ctx.method === 'GET' && !key && 'uploads' in ctx.query) {
    let ids = [];
    try { ids = fs.readdirSync(uploadsDir()); } catch {}
    const uploads = ids.map((id) => {
      const dir = path.join(uploadsDir(), id);
      let k = '';
      try { k = fs.readFileSync(path.join(dir, 'key'), 'utf8'); } catch {}
      const initiated = fs.statSync(dir).mtime.toISOString();
      return '<Upload><Key>' + xml(k) + '</Key><UploadId>' + id + '</UploadId><Initiated>' + initiated + '</Initiated><StorageClass>STANDARD</StorageClass></Upload>';
    });
    ctx.type = 'application/xml';
    ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>' + bucket +
      '</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>' + uploads.join('') + '</ListMultipartUploadsResult>';
    return;
  }
  if (ctx.method === 'DELETE' && key && ctx.query.uploadId) {
    const dir = path.join(uploadsDir(), path.basename(String(ctx.query.uploadId)));
    if (!fs.existsSync(dir)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = errorBody('NoSuchUpload', 'The specified upload does not exist.');
      return;
    }
    fs.rmSync(dir, { recursive: true, force: true });
    ctx.status = 204;
    return;
  }
  if (ctx.method === 'PUT' && key && !ctx.query.uploadId && ctx.get('if-none-match') === '*') {
    // Conditional put (S3 answers 412 when the key exists); one at a time per key, so two racing
    // creators cannot both pass the check.
    const previous = conditional.get(key) || Promise.resolve();
    let done;
    const turn = new Promise((r) => (done = r));
    conditional.set(key, previous.then(() => turn));
    await previous;
    try {
      if (await server.store.existsObject(bucket, key)) {
        ctx.req.resume();
        ctx.status = 412;
        ctx.type = 'application/xml';
        ctx.body = errorBody('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
        return;
      }
      return await next();
    } finally {
      done();
    }
  }
  if (failPut && ctx.method === 'PUT' && key && !ctx.query.uploadId && failPut.test(key)) {
    ctx.req.resume();
    ctx.status = 500;
    ctx.type = 'application/xml';
    ctx.body = errorBody('InternalError', 'injected fault: PutObject ' + key + ' fails');
    return;
  }
  if (partDelay && ctx.method === 'PUT' && key && ctx.query.uploadId) await new Promise((r) => setTimeout(r, partDelay));
  if (failFrom && ctx.method === 'PUT' && key && ctx.query.uploadId && Number(ctx.query.partNumber) >= failFrom) {
    ctx.req.resume();
    ctx.status = 500;
    ctx.type = 'application/xml';
    ctx.body = errorBody('InternalError', 'injected fault: UploadPart ' + ctx.query.partNumber + ' fails');
    return;
  }
  return next();
});
server.run().then(
  (address) => process.stdout.write(JSON.stringify({ port: address.port }) + '\n'),
  (err) => { console.error(err); process.exit(1); },
);
`;

export async function startS3Server(options: S3TestServerOptions = {}): Promise<S3TestServer> {
  const bucket = options.bucket ?? 'test-bucket';
  const directory = options.directory ?? (await mkdtemp(join(tmpdir(), 's3rver-')));
  const s3rverModule = createRequire(import.meta.url).resolve('s3rver');
  const child = spawn(process.execPath, ['-e', CHILD_SCRIPT], {
    env: {
      ...process.env,
      S3RVER_MODULE: s3rverModule,
      S3RVER_DIR: directory,
      S3RVER_BUCKET: bucket,
      S3RVER_FAIL_PART_FROM: String(options.failUploadPartFrom ?? 0),
      S3RVER_PART_DELAY_MS: String(options.uploadPartDelayMs ?? 0),
      S3RVER_FAIL_PUT_KEY: options.failPutObjectKey ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const requests: S3Request[] = [];
  let markers = 0;
  const port = await readPort(child, requests);
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  return {
    endpoint,
    bucket,
    directory,
    client,
    requests,
    async requestLog() {
      // The server logs each request before answering it, on one ordered stream: once the
      // marker's line has arrived, so have the lines of every request answered before it.
      const marker = `m${++markers}`;
      await fetch(`${endpoint}/__log-marker__/${marker}`);
      const deadline = Date.now() + 10_000;
      while (!requests.some((r) => r.op === 'LogMarker' && r.key === marker)) {
        if (Date.now() > deadline) throw new Error('the s3rver request log did not catch up');
        await new Promise((r) => setTimeout(r, 5));
      }
      return requests.filter((r) => r.op !== 'LogMarker');
    },
    async listMultipartUploads() {
      const { ListMultipartUploadsCommand } = await import('@aws-sdk/client-s3');
      const result = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
      return (result.Uploads ?? []).map((u) => ({ key: u.Key ?? '', uploadId: u.UploadId ?? '' }));
    },
    kill() {
      child.kill('SIGKILL');
    },
    async stop() {
      client.destroy();
      child.kill('SIGTERM');
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function readPort(child: ChildProcess, requests: S3Request[]): Promise<number> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`s3rver did not start within 20s: ${stderr}`));
    }, 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
      lines.on('line', (request) => requests.push(JSON.parse(request)));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited (${code}) before it started: ${stderr}`));
    });
  });
}

/** Points the AWS SDK's default chain at s3rver's key pair; returns a function restoring the environment. */
export function useS3rverEnvironment(
  endpoint?: string,
  credentials: { accessKeyId: string; secretAccessKey: string } = S3RVER_CREDENTIALS,
): () => void {
  const saved = {
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
    AWS_REGION: process.env.AWS_REGION,
    AWS_SESSION_TOKEN: process.env.AWS_SESSION_TOKEN,
    S3_ENDPOINT: process.env.S3_ENDPOINT,
  };
  process.env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  process.env.AWS_REGION = 'us-east-1';
  delete process.env.AWS_SESSION_TOKEN;
  if (endpoint) process.env.S3_ENDPOINT = endpoint;
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/**
 * s3rver for every test of the calling file: started before them with the SDK's environment pointed
 * at it, stopped and the environment restored after. The returned object reads through to the
 * server once it has started (`s3.bucket`, `s3.client` inside a test).
 */
export function s3ServerForFile(options: S3TestServerOptions = {}): S3TestServer {
  let server: S3TestServer | undefined;
  let restoreEnv: (() => void) | undefined;
  beforeAll(async () => {
    server = await startS3Server(options);
    restoreEnv = useS3rverEnvironment(server.endpoint);
  });
  afterAll(async () => {
    restoreEnv?.();
    await server?.stop();
  });
  return new Proxy({} as S3TestServer, {
    get(_target, key) {
      if (!server) throw new Error('s3ServerForFile: the server starts in beforeAll; read it inside a test');
      return Reflect.get(server, key) as unknown;
    },
  });
}
