import { describe, expect, it } from 'vitest';
import { parseS3Location, s3Location } from '../../src/storage/s3-client.js';

describe('parseS3Location', () => {
  it('splits a bucket and a prefix as a folder', () => {
    expect(parseS3Location('s3://lake/catalog/products')).toEqual({
      bucket: 'lake',
      key: 'catalog/products',
      prefix: 'catalog/products/',
    });
    expect(parseS3Location('s3://lake/catalog/products//')).toMatchObject({ prefix: 'catalog/products/' });
  });

  it('gives an empty key and prefix for a bare bucket, with or without the slash', () => {
    expect(parseS3Location('s3://lake')).toEqual({ bucket: 'lake', key: '', prefix: '' });
    expect(parseS3Location('s3://lake/')).toEqual({ bucket: 'lake', key: '', prefix: '' });
  });

  it('keeps a file key as written (the state file)', () => {
    expect(parseS3Location('s3://lake/state/nightly.json')?.key).toBe('state/nightly.json');
  });

  it('is undefined for a local path or a malformed URL', () => {
    for (const location of ['out/table', '/abs/s3://lake', 's3:/lake/x', 's3:///x', 'S3://lake/x'])
      expect(parseS3Location(location), location).toBeUndefined();
  });

  it('reads back what s3Location writes', () => {
    expect(parseS3Location(s3Location('lake', 'a/b.json'))).toMatchObject({ bucket: 'lake', key: 'a/b.json' });
  });
});
