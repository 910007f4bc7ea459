// The lookup operations the spec only names (§4.9): GET /v4/products/find and
// GET /v4/media/find. Their parameters and answers are not shown; public
// clients of the live service (docs/live-service.md, F1) ask
// `?id=<id>`, one record per request, and read `{product: record}` /
// `{media: record}`; `{result: record}` and a bare record are read too, any
// other body is invalid_response (client/catalog-client.ts foundRecord). 404
// means no such record. The sandbox answers wrapped under its live profiles.
import type { ResourceName } from '../resources/index.js';

export interface FindEndpointSpec {
  name: string;
  method: 'GET';
  path: string;
  resource: ResourceName;
  /** The query parameter that carries the id. */
  idParameter: 'id';
  /** What a valid id looks like (checked before the request is sent). */
  idKind: 'string' | 'integer';
}

export const findEndpoints = {
  'products.find': {
    name: 'products.find',
    method: 'GET',
    path: '/v4/products/find',
    resource: 'product',
    idParameter: 'id',
    idKind: 'string',
  },
  'media.find': {
    name: 'media.find',
    method: 'GET',
    path: '/v4/media/find',
    resource: 'media',
    idParameter: 'id',
    idKind: 'integer',
  },
} as const satisfies Record<string, FindEndpointSpec>;

export type FindEndpointName = keyof typeof findEndpoints;
export const FIND_ENDPOINT_NAMES = Object.keys(findEndpoints) as FindEndpointName[];
