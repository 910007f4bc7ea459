// The S3 access for `state.path: s3://bucket/key`: the same client settings as
// the s3 sink (AWS SDK credential chain, S3_ENDPOINT for S3-compatible servers).
import { GetObjectCommand, NoSuchKey, PutObjectCommand } from '@aws-sdk/client-s3';
import { CatalogStreamsError } from '../errors.js';
import type { S3ObjectIO } from '../pipeline/state.js';
import { createS3Client } from '../sinks/index.js';

export function s3ObjectIO(): S3ObjectIO {
  const client = createS3Client({ maxAttempts: 3 });
  const fail = (action: string, bucket: string, key: string, err: unknown): never => {
    throw new CatalogStreamsError('state.s3', `cannot ${action} state s3://${bucket}/${key}: ${(err as Error).name}: ${(err as Error).message} (check AWS credentials, region and S3_ENDPOINT)`, { cause: err });
  };
  return {
    async getObject(bucket, key) {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return await res.Body!.transformToString('utf8');
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
        return fail('read', bucket, key, err);
      }
    },
    async putObject(bucket, key, body) {
      try {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'application/json' }));
      } catch (err) {
        fail('write', bucket, key, err);
      }
    },
  };
}
