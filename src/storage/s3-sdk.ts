// The AWS SDK (client-s3 + lib-storage), loaded the first time something needs
// S3. It is about 20 MB of resident memory and a noticeable part of startup
// that runs writing only local files (and `validate`, `stages`, `--dry-run`)
// never use; static imports paid for it in every process.
import type * as ClientS3 from '@aws-sdk/client-s3';
import type { Upload } from '@aws-sdk/lib-storage';

export interface S3Sdk {
  s3: typeof ClientS3;
  Upload: typeof Upload;
}

let loading: Promise<S3Sdk> | undefined;

export function loadS3Sdk(): Promise<S3Sdk> {
  loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([s3, storage]) => ({
    s3,
    Upload: storage.Upload,
  }));
  return loading;
}
