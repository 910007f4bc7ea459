// The AWS SDK (client-s3 + lib-storage), loaded the first time something needs
// S3. It is about 20 MB of resident memory and a noticeable part of startup
// that runs writing only local files (and `validate`, `stages`, `--dry-run`)
// never use; static imports paid for it in every process. It is also an
// optional peer dependency (22 MB on disk that a local-only user should not
// install), so every S3 feature must say what to install when it is missing.
import { createRequire } from 'node:module';
import type * as ClientS3 from '@aws-sdk/client-s3';
import type { Upload } from '@aws-sdk/lib-storage';
import { MissingDependencyError } from '../errors.js';

export interface S3Sdk {
  s3: typeof ClientS3;
  Upload: typeof Upload;
}

export const S3_SDK_PACKAGES = ['@aws-sdk/client-s3', '@aws-sdk/lib-storage'] as const;

/** The S3 features, as named in `dependency.missing.<feature>` codes and messages. */
export const S3_FEATURES = {
  's3-sink': 'the s3 sink',
  's3-table': 'a table sink with an s3:// path',
  's3-state': 'an s3:// state.path',
  's3-media': 'a media-mirror sink with an s3:// path',
} as const;
export type S3Feature = keyof typeof S3_FEATURES;

export function missingS3Sdk(feature: S3Feature, where?: string, cause?: unknown): MissingDependencyError {
  return new MissingDependencyError(
    feature,
    S3_SDK_PACKAGES,
    `${where ? `${where}: ` : ''}${S3_FEATURES[feature]} needs the AWS SDK (${S3_SDK_PACKAGES.join(', ')}), an optional peer dependency of catalog-streams that is not installed`,
    cause === undefined ? {} : { cause },
  );
}

const isMissingSdk = (err: unknown) => {
  const e = err as NodeJS.ErrnoException | undefined;
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    S3_SDK_PACKAGES.some((p) => String(e.message).includes(p))
  );
};

/**
 * Whether the SDK can be found, without loading it (preflight, before any request). require.resolve searches
 * the same node_modules folders as the import (both packages ship a CommonJS entry) and, unlike
 * import.meta.resolve, also works inside the test runner.
 */
export function s3SdkInstalled(): boolean {
  const require = createRequire(import.meta.url);
  try {
    for (const p of S3_SDK_PACKAGES) require.resolve(p);
    return true;
  } catch (err) {
    if (isMissingSdk(err)) return false;
    throw err;
  }
}

let loading: Promise<S3Sdk> | undefined;

/** Loads the SDK once; `feature` names who needed it when it is missing (MissingDependencyError). */
export function loadS3Sdk(feature: S3Feature): Promise<S3Sdk> {
  loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([s3, storage]) => ({
    s3,
    Upload: storage.Upload,
  }));
  return loading.catch((err: unknown) => {
    // Not cached as failed for good: the error names this caller's feature, and a later install may fix it.
    loading = undefined;
    throw isMissingSdk(err) ? missingS3Sdk(feature, undefined, err) : err;
  });
}
