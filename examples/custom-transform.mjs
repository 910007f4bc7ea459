// A module of your own for the `custom` transform (see
// pipelines/custom-transform.yml). Each export is a plain function of
// (record, ctx): ctx.options is the stage's `options:` from the pipeline file,
// ctx.run the run's name, id and start. The `kind` of the stage fixes the
// contract:
//   map       return the new record, or null to drop it
//   filter    return true to keep the record unchanged, false to drop it
//   flat-map  return a list of records (null or [] for none)
// Returning undefined (a forgotten `return`) is never "drop": it fails the run
// with an error naming this module, the export and the record's id. Any kind
// may return a Promise; one that has not settled after the stage's `timeout`
// (default 60s) fails the run too. Throwing fails the run with your message.
// Keep functions fast and synchronous when you can: they run once per record.

/** kind: filter. Keeps products with at least one photo. */
export function hasPhoto(product) {
  return Array.isArray(product.photos) && product.photos.length > 0;
}

/**
 * kind: map (the default export). Adds `priceBand` (low / mid / high, from
 * publicPrice in cents against `options.bands`) and `currency`. Prices stay the
 * integers the API sends: no float arithmetic on money.
 */
export default function addPriceBand(product, ctx) {
  const { bands = [1000, 5000], currency = 'EUR' } = ctx.options ?? {};
  const price = product.publicPrice;
  const priceBand = typeof price !== 'number' ? null : price < bands[0] ? 'low' : price < bands[1] ? 'mid' : 'high';
  return { ...product, priceBand, currency };
}
