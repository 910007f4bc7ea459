// GET /v4/products/find?id=... and GET /v4/media/find?id=... (named only by
// the spec, §4.9): one record by id, as the query and stream endpoints serve
// it; 404 when there is no such record, 400 without an id. The live profiles
// wrap it as the live service does (F1): `{"product": record}`,
// `{"media": record}`; `spec` answers the bare record (our decision where the
// spec is silent). Authentication and the rate limit are the server's, as for
// every API request.
import type { ServerResponse } from 'node:http';
import { type FindEndpointSpec, findEndpoints } from '../catalog/index.js';
import { apiError } from './api-errors.js';
import type { Dataset } from './dataset.js';
import { sendJsonChunks } from './responses.js';

export const findRoutes = new Map<string, FindEndpointSpec>(Object.values(findEndpoints).map((e) => [e.path, e]));

/** The record's JSON text, or an ApiError (400 no id, 404 not found). */
export function findJson(ds: Dataset, spec: FindEndpointSpec, query: URLSearchParams): string {
  const id = query.get(spec.idParameter);
  if (id === null || id === '')
    throw apiError(
      400,
      `${spec.path}: the query parameter "${spec.idParameter}" is required (${spec.path}?${spec.idParameter}=...)`,
    );
  if (spec.resource === 'product') {
    const index = ds.productIndex(id);
    if (index < 0) throw apiError(404, `no product with id "${id}"`);
    return wrapped(ds, 'product', ds.productJson(index));
  }
  const n = /^\d+$/.test(id) ? Number(id) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > ds.mediaCount) throw apiError(404, `no media with id "${id}"`);
  return wrapped(ds, 'media', ds.mediaJson(n - 1));
}

function wrapped(ds: Dataset, key: 'product' | 'media', json: string): string {
  return ds.profile === 'spec' ? json : `{"${key}":${json}}`;
}

export function sendFound(res: ServerResponse, json: string): void {
  sendJsonChunks(res, 200, [Buffer.from(json)]);
}
