// The S3 access for `state.path: s3://bucket/key`: the same client settings as
// the s3 sink (AWS SDK credential chain, S3_ENDPOINT for S3-compatible servers).
import { CatalogStreamsError } from '../errors.js';
import type { S3ObjectIO } from '../pipeline/state.js';
import { createS3Client } from '../sinks/index.js';
import { loadS3Sdk } from '../sinks/s3-sdk.js';

export function s3ObjectIO(): S3ObjectIO {
  // Created on first use: the AWS SDK loads only when a state really lives on S3.
  let connecting: ReturnType<typeof createS3Client> | undefined;
  const connect = async () => ({
    client: await (connecting ??= createS3Client({ maxAttempts: 3 })),
    s3: (await loadS3Sdk()).s3,
  });
  const fail = (action: string, bucket: string, key: string, err: unknown): never => {
    throw new CatalogStreamsError(
      'state.s3',
      `cannot ${action} state s3://${bucket}/${key}: ${(err as Error).name}: ${(err as Error).message} (check AWS credentials, region and S3_ENDPOINT)`,
      { cause: err },
    );
  };
  return {
    async getObject(bucket, key) {
      try {
        const { client, s3 } = await connect();
        const res = await client.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
        return await res.Body!.transformToString('utf8');
      } catch (err) {
        if ((err as { name?: string }).name === 'NoSuchKey') return undefined;
        return fail('read', bucket, key, err);
      }
    },
    async putObject(bucket, key, body, opts) {
      try {
        const { client, s3 } = await connect();
        await client.send(
          new s3.PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body,
            ContentType: 'application/json',
            ...(opts?.ifNoneMatch ? { IfNoneMatch: '*' } : {}),
          }),
        );
        return true;
      } catch (err) {
        // A conditional put of the lock: 412 it exists, 409 another one is being written.
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (opts?.ifNoneMatch && (status === 412 || status === 409)) return false;
        return fail('write', bucket, key, err);
      }
    },
    async deleteObject(bucket, key) {
      try {
        const { client, s3 } = await connect();
        await client.send(new s3.DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (err) {
        fail('delete', bucket, key, err);
      }
    },
  };
}
