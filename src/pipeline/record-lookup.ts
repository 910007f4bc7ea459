// The run's source asked again for given ids (`ctx.recordLookup`): how the table sink
// learns whether a key missing from a full run's extract still exists (its delete candidates).
//
// Why the runner builds it and not the sink with `ctx.client`: what the sink holds are records
// after the transforms (flatten-locales, pick, drop...), and only records shaped the same way
// compare with them; and an extract with a filter (`status: [active, ...]`) leaves out a record
// that moved out of the filter, which must stay a delete, while an `id` filter alone would find
// it. So a lookup is the run's source with its own filter (not the updatedSince window of a state
// run, which is what a record updated during the run left) AND the ids, through fresh instances
// of the run's transforms.
//
// Transforms with an invalid-record policy (validate, normalize-codes) skip invalid records here
// without a limit, and the lookup reports their ids as `rejected`: such a record exists (the sink
// keeps its last valid row rather than deleting it), and the extract already counted it and
// wrote its dead letter, so the lookup writes none and does not count it again (its `invalid`
// events are not forwarded); a lookup of a few records must not trip a percentage meant for an
// extract either. `onInvalid: fail` stays fail, as in the extract.
import { Writable, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EventEmitter } from 'node:events';
import { getEndpoint, isEmptyObject } from '../catalog/index.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { RecordLookup, StageContext } from '../core/stage.js';
import { RunEvents, type RunEventName } from '../events.js';
import { andFilter } from '../sources/sliced-products-query.js';
import type { PipelinePlan } from './plan.js';

/**
 * What a lookup's stages report to the run: the requests (budget, watchdog), problems and notes;
 * not pages and totals, which would count as the extract's, nor `invalid` (see the head of this file).
 */
const FORWARDED: readonly RunEventName[] = ['request', 'retry', 'throttle', 'warning', 'info'];

/** Page size of a lookup, and the ids it asks for at once: each lookup is one page. */
const LOOKUP_PAGE_SIZE = 250;

export interface RecordLookupOptions {
  plan: PipelinePlan;
  /** The source as the run sends it (connection concurrency applied); its filter is replaced. */
  source: () => PlannedStage<'source'>;
  /** The run's stage context, once made. */
  ctx: () => StageContext;
}

export function createRecordLookup(o: RecordLookupOptions): RecordLookup {
  const { plan } = o;
  const type = plan.source.type;
  const endpoint = plan.endpoint;
  if (!endpoint) return { available: false, reason: `source ${type} is not an endpoint of the API` };
  if (!(getEndpoint(type)?.codeFilters ?? []).includes('id'))
    return { available: false, reason: `${type} has no filter by a list of ids` };
  const own = plan.source.written.filter;
  const transforms = plan.transforms.map(lookupTransform);
  return {
    available: true,
    endpoint: type,
    maxIds: LOOKUP_PAGE_SIZE,
    async read(ids, onRecord) {
      if (ids.length === 0) return { requests: 0, rejected: [] };
      if (ids.length > LOOKUP_PAGE_SIZE)
        throw new RangeError(`a lookup takes at most ${LOOKUP_PAGE_SIZE} ids, got ${ids.length}`);
      const ctx = o.ctx();
      const events = new RunEvents();
      let requests = 0;
      events.on('request', () => requests++);
      const rejected: Array<string | number> = [];
      events.on('invalid', (e) => {
        if (e.id !== undefined) rejected.push(e.id);
      });
      const off = FORWARDED.map((name) => {
        const h = (...args: unknown[]) => (ctx.events as EventEmitter).emit(name, ...args);
        (events as EventEmitter).on(name, h);
        return () => (events as EventEmitter).off(name, h);
      });
      const stageCtx: StageContext = { ...ctx, events };
      try {
        const source = lookupSource(o.source(), own, ids, endpoint.mode === 'paged');
        const stages = transforms.map((t) => t.definition.create(t.options, stageCtx) as Transform);
        const collect = new Writable({
          objectMode: true,
          write(record: Record<string, unknown>, _encoding, callback) {
            Promise.resolve()
              .then(() => onRecord(record))
              .then(() => callback(), callback);
          },
        });
        const chain = [source.definition.create(source.options, stageCtx) as Readable, ...stages, collect];
        await pipeline(chain as [Readable, ...Transform[], Writable], { signal: ctx.signal });
        return { requests, rejected };
      } finally {
        for (const f of off) f();
      }
    },
  };
}

/**
 * The run's source asking for `ids` within its own filter (not the window): a request of its own,
 * so its options are parsed like any request's, from the source's options as written.
 */
function lookupSource(
  source: PlannedStage<'source'>,
  own: unknown,
  ids: ReadonlyArray<string | number>,
  paged: boolean,
): PlannedStage<'source'> {
  const { sorting: _sorting, pageSize: _pageSize, filter: _filter, ...rest } = source.written;
  const concurrency = source.options.concurrency;
  const written = {
    ...rest,
    ...(concurrency !== undefined && rest.concurrency === undefined && paged ? { concurrency } : {}),
    filter: own === undefined || isEmptyObject(own) ? { id: [...ids] } : andFilter(own, { id: [...ids] }),
    ...(paged ? { pageSize: LOOKUP_PAGE_SIZE } : {}),
  };
  return { ...source, written, options: source.definition.options.parse(written) as Record<string, unknown> };
}

/**
 * A transform as a lookup runs it: invalid records skipped without a limit (see the head of this
 * file). The dead-letter spec stays as parsed (the policy reads it; with skip it creates no sink).
 */
function lookupTransform(stage: PlannedStage<'transform'>): PlannedStage<'transform'> {
  const { onInvalid } = stage.options;
  if (onInvalid !== 'skip' && onInvalid !== 'dead-letter') return stage;
  return { ...stage, options: { ...stage.options, onInvalid: 'skip', maxInvalid: 'none' } };
}
