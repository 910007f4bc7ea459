// A SigV4-checking front for a test server, as AWS's endpoints check a request: it reads the
// Authorization header's scope and signed headers, signs the request it received again with the
// AWS SDK's own signer and the secret it knows (hashing with the SDK's pure-JS SHA-256, not the
// node:crypto one src/ uses), and compares the signatures; it also checks x-amz-content-sha256
// against the body it got (the signer takes that header's word for the payload), the session
// token, and that the clock is the one signed. A request that passes is forwarded to `target`
// without its AWS headers; one that fails is answered 403 the way AWS does, and logged.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256Js } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { request } from 'undici';

export interface SigV4VerifierOptions {
  target: string;
  region: string;
  service: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface VerifiedRequest {
  method: string;
  path: string;
  /** undefined: the signature matched; otherwise why it was refused. */
  refused: string | undefined;
  signedHeaders: string[];
}

export interface SigV4Verifier {
  url: string;
  requests: VerifiedRequest[];
  close(): Promise<void>;
}

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;

export async function startSigV4Verifier(options: SigV4VerifierOptions): Promise<SigV4Verifier> {
  const requests: VerifiedRequest[] = [];
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}),
    },
    region: options.region,
    service: options.service,
    sha256: Sha256Js,
  });

  async function verify(req: IncomingMessage, body: Buffer): Promise<{ refused?: string; signedHeaders: string[] }> {
    const m = AUTH.exec(String(req.headers.authorization ?? ''));
    if (!m) return { refused: 'no SigV4 Authorization header', signedHeaders: [] };
    const [, keyId, day, region, service, signedList, signature] = m as unknown as string[];
    const signedHeaders = signedList!.split(';');
    if (keyId !== options.accessKeyId) return { refused: 'unknown access key', signedHeaders };
    if (region !== options.region || service !== options.service)
      return { refused: `credential scope ${region}/${service}`, signedHeaders };
    for (const needed of ['host', 'x-amz-date', 'x-amz-content-sha256'])
      if (!signedHeaders.includes(needed)) return { refused: `${needed} is not signed`, signedHeaders };
    if (options.sessionToken && req.headers['x-amz-security-token'] !== options.sessionToken)
      return { refused: 'wrong or missing x-amz-security-token', signedHeaders };
    const bodyHash = Buffer.from(await digest(body)).toString('hex');
    if (req.headers['x-amz-content-sha256'] !== bodyHash)
      return { refused: 'x-amz-content-sha256 is not the hash of the body', signedHeaders };
    const amzDate = String(req.headers['x-amz-date']);
    if (amzDate.slice(0, 8) !== day) return { refused: 'x-amz-date is not the scope day', signedHeaders };
    const url = new URL(req.url ?? '/', 'http://placeholder');
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) headers[name] = String(req.headers[name] ?? '');
    const [host, port] = headers.host!.split(':');
    const again = await signer.sign(
      {
        method: req.method ?? 'GET',
        protocol: 'http:',
        hostname: host!,
        ...(port ? { port: Number(port) } : {}),
        path: url.pathname,
        query,
        headers,
        ...(body.length ? { body: body.toString('utf8') } : {}),
      },
      { signingDate: parseAmzDate(amzDate) },
    );
    const expected = AUTH.exec(String(again.headers.authorization))?.[6];
    return expected === signature ? { signedHeaders } : { refused: 'the signature does not match', signedHeaders };
  }

  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const { refused, signedHeaders } = await verify(req, body);
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', refused, signedHeaders });
      if (refused) {
        // AWS's answer to a bad signature (its JSON services' shape).
        res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException' });
        res.end(
          JSON.stringify({
            message: `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. (${refused})`,
          }),
        );
        return;
      }
      const forwarded: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string' && !/^(authorization|host|x-amz-|connection|content-length)/.test(name))
          forwarded[name] = value;
      const answer = await request(`${options.target}${req.url ?? '/'}`, {
        method: (req.method ?? 'GET') as 'GET',
        headers: forwarded,
        ...(body.length ? { body } : {}),
      });
      const text = await answer.body.text();
      res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? 'text/plain') });
      res.end(text);
    })().catch((err: unknown) => {
      res.writeHead(500);
      res.end(`verifier bug: ${(err as Error).message}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function digest(body: Buffer): Promise<Uint8Array> {
  const hash = new Sha256Js();
  hash.update(body);
  return hash.digest();
}

/** 20261127T174501Z -> Date */
function parseAmzDate(text: string): Date {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return new Date(NaN);
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}
