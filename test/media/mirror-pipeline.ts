// The pipeline file the media-mirror fault tests run: active products into a local mirror, no
// retries within a run, and half the files allowed to fail; `options` adds sink option lines.
export const mirrorPipeline = (options = '') => `name: mirror
source: { type: products.query, filter: { status: active } }
sinks:
  - type: media-mirror
    path: out/media
    retries: 0
    maxFailedShare: 0.5
${options}`;
