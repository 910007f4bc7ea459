// A full run's delete check (ARCHITECTURE.md, "Reading a changing catalog"): the keys of the
// previous state missing from the extract are asked for again by id before the merge, and what
// the API still returns joins the run's records, so the merge writes it as an update or
// unchanged, not a delete.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { AbortedError, CatalogStreamsError, DataError, SinkError } from '../../errors.js';
import type { RunEvents } from '../../events.js';
import type { RecordLookup } from '../../core/stage.js';
import { compareKeys, ExternalSort, frameBody, keyOfBody, readFrameBodies, type Key } from './sorted-records.js';
import { isKey, keyError, keyOf, keyPaths } from './table-key.js';

/** What a full run's check of its delete candidates did. */
export interface DeleteCheck {
  /** The endpoint asked; absent when no lookup was possible. */
  endpoint?: string;
  /** Why no lookup was possible. */
  unavailable?: string;
  /** Candidates asked for (those with an id). */
  checked: number;
  /** Candidates whose previous record has no id: deleted unchecked. */
  unverifiable: number;
  requests: number;
  /** The records the lookups returned, by key. */
  found?: ExternalSort;
  /**
   * Ids of candidates that exist but whose current version a transform rejected (invalid, in the
   * extract's dead letters): kept in their last valid row, not deleted. Few (the extract's
   * maxInvalid bounds them), so held in memory.
   */
  invalid: Set<string | number>;
}

/** What the check reads and reports through; the table sink provides it. */
export interface DeleteCheckInput {
  lookup: RecordLookup | undefined;
  /** The key option (a dotted path). */
  key: string;
  sortBufferBytes: number;
  /** A temp folder of the run (the candidates' ids and the found records' sort go there). */
  tempDir: string;
  /** The table, for messages. */
  where: string;
  events: RunEvents;
  signal: AbortSignal;
  /** Called once a lookup is possible, before the state is read: the state is read twice from here on. */
  beforeRead(): Promise<void>;
  /** The previous state's frame bodies. */
  stateBodies(): AsyncIterable<Buffer>;
  /** The run's records, sorted by key. */
  extract: ExternalSort;
  /** Throws when the sink was stopped. */
  checkStopped(): void;
  progress(what: string, detail: Record<string, number>): void;
}

/**
 * A full run's delete candidates (keys of the previous state missing from the extract) asked for
 * again by the `id` of their previous record, in lookups of at most `maxIds` ids (`products.query`:
 * pages of 250, so 1 to 4 requests each).
 *
 * A first pass over the keys finds the candidates before any row is written; it decodes only
 * the keys, and the records of the candidates. The candidates' ids go to a temp file and the
 * found records to a sort of their own, so many candidates (a narrowed filter, a mass delete)
 * cost disk and requests, not memory.
 */
export async function checkDeleteCandidates(input: DeleteCheckInput): Promise<DeleteCheck> {
  const lookup: RecordLookup = input.lookup ?? {
    available: false,
    reason: 'the stage context has no record lookup (ctx.recordLookup, which the runner sets)',
  };
  const invalid = new Set<string | number>();
  if (!lookup.available) return { unavailable: lookup.reason, checked: 0, unverifiable: 0, requests: 0, invalid };
  await input.beforeRead();
  const candidatesFile = path.join(input.tempDir, 'delete-candidates.v8');
  const { checked, unverifiable } = await writeCandidates(input, candidatesFile);
  if (checked === 0) return { endpoint: lookup.endpoint, checked, unverifiable, requests: 0, invalid };

  const foundDir = path.join(input.tempDir, 'found');
  await mkdir(foundDir);
  const found = new ExternalSort(foundDir, input.sortBufferBytes);
  input.events.emit('info', {
    code: 'table.deletes_checking',
    message: `table ${input.where}: ${checked} key(s) of the previous version are missing from this full run's extract; asking ${lookup.endpoint} whether they still exist`,
    candidates: checked,
  });
  const requests = await lookUp(input, lookup, candidatesFile, { found, invalid, checked });
  return { endpoint: lookup.endpoint, checked, unverifiable, requests, found, invalid };
}

/** The first pass: the ids of the previous keys the extract lacks, framed into `file`. */
async function writeCandidates(
  input: DeleteCheckInput,
  file: string,
): Promise<{ checked: number; unverifiable: number }> {
  const out = createWriteStream(file);
  const written = new Promise<void>((resolve, reject) => {
    out.once('finish', resolve);
    out.once('error', reject);
  });
  written.catch(() => {});
  let checked = 0;
  let unverifiable = 0;
  const nextIt = input.extract.sorted()[Symbol.asyncIterator]();
  try {
    const prevIt = input.stateBodies()[Symbol.asyncIterator]();
    let p = await prevIt.next();
    let n = await nextIt.next();
    let keys = 0;
    while (!p.done) {
      input.checkStopped();
      if (++keys % 1024 === 0) input.progress(`finding delete candidates: ${keys} keys`, { keys, candidates: checked });
      const key = keyOfBody(p.value);
      const order = n.done ? -1 : compareKeys(key, n.value.key);
      if (order > 0) {
        n = await nextIt.next();
        continue;
      }
      if (order < 0) {
        const id = input.key === 'id' ? key : (deserialize(p.value) as [Key, Record<string, unknown>])[1].id;
        if (typeof id === 'string' || typeof id === 'number') {
          checked++;
          if (!out.write(frameBody(serialize(id)))) await once(out, 'drain');
        } else unverifiable++;
      } else n = await nextIt.next();
      p = await prevIt.next();
    }
  } finally {
    out.end();
    // The extract's keys past the last previous one are not needed: close the sort's run files.
    await nextIt.return(undefined);
  }
  await written;
  return { checked, unverifiable };
}

/** The second pass: the candidates asked for in batches; returns the requests made. */
async function lookUp(
  input: DeleteCheckInput,
  lookup: Extract<RecordLookup, { available: true }>,
  candidatesFile: string,
  into: { found: ExternalSort; invalid: Set<string | number>; checked: number },
): Promise<number> {
  const steps = keyPaths(input.key);
  let requests = 0;
  const batch = new Set<string | number>();
  const flush = async () => {
    const ids = [...batch];
    batch.clear();
    try {
      const answer = await lookup.read(ids, (record) => {
        input.checkStopped();
        const key = keyOf(record, steps);
        if (!isKey(key))
          throw keyError(
            `a record ${lookup.endpoint} returned for a delete candidate (id ${JSON.stringify(record.id)})`,
            input.key,
            key,
          );
        return into.found.add(key, record);
      });
      requests += answer.requests;
      for (const id of answer.rejected ?? []) into.invalid.add(id);
    } catch (err) {
      throw lookupFailure(err, input, lookup.endpoint, into.checked);
    }
  };
  for await (const body of readFrameBodies(createReadStream(candidatesFile))) {
    batch.add(deserialize(body) as string | number);
    if (batch.size >= lookup.maxIds) await flush();
  }
  if (batch.size > 0) await flush();
  return requests;
}

/** A lookup that failed: a stop or an invalid record as it is, anything else a retryable sink error. */
function lookupFailure(err: unknown, input: DeleteCheckInput, endpoint: string, checked: number): unknown {
  if (err instanceof AbortedError || (err as Error).name === 'AbortError' || input.signal.aborted) return err;
  // An invalid record with onInvalid: fail fails the run as it would in the extract (a retry does not help).
  if (err instanceof DataError && (err.code === 'table.key' || err.code === 'data.invalid')) return err;
  const code = err instanceof CatalogStreamsError && err.code ? ` (${err.code})` : '';
  return new SinkError(
    `table: checking ${checked} delete candidate(s) of ${input.where} against ${endpoint} failed${code}: ${(err as Error).message}; ` +
      'nothing was published and the state cursor was left as it was. Run again: a full run tells a deleted key from one updated while it read only by asking for it',
    { code: 'table.deletes_check_failed', cause: err },
  );
}

/** What the check did, or why it could not: an info event, and a warning for deletes nobody checked. */
export function reportCheck(
  events: RunEvents,
  where: string,
  check: DeleteCheck,
  outcome: { kept: number; keptInvalid: number; counts: { deleted: number } },
): void {
  const { kept, keptInvalid: invalid } = outcome;
  const { deleted } = outcome.counts;
  if (check.unavailable !== undefined) {
    if (deleted > 0)
      events.emit('warning', {
        code: 'table.deletes_unchecked',
        message: `table ${where}: ${deleted} delete(s) were not checked against the API (${check.unavailable}); a record updated while the run read shows as deleted, and a later run inserts it again`,
      });
    return;
  }
  if (check.unverifiable > 0)
    events.emit('warning', {
      code: 'table.deletes_unchecked',
      message: `table ${where}: ${check.unverifiable} delete candidate(s) have no string or number \`id\` in their previous record (a transform dropped or renamed it), so they were not checked and are deleted`,
    });
  events.emit('info', {
    code: 'table.deletes_checked',
    message:
      `table ${where}: ${check.checked} delete candidate(s) checked against ${check.endpoint} (${check.requests} request(s)): ${kept} still exist and stay, ${deleted} deleted` +
      (invalid > 0
        ? `; ${invalid} of those that stay fail validation now and keep their last valid row (the extract rejected their current version)`
        : ''),
    checked: check.checked,
    kept,
    invalid,
    deleted,
    requests: check.requests,
  });
}

/** A full run that would delete more than `deletes.maxRatio` of the previous keys fails, unless --allow-deletes. */
export function refuseDeletes(
  { counts, previousRows }: { counts: { deleted: number }; previousRows: number },
  check: DeleteCheck | undefined,
  { maxRatio, allow, where }: { maxRatio: number; allow: boolean; where: string },
): void {
  if (previousRows === 0 || counts.deleted / previousRows <= maxRatio || allow) return;
  const share = ((100 * counts.deleted) / previousRows).toFixed(1);
  throw new SinkError(
    `table: this full run would delete ${counts.deleted} of ${previousRows} keys (${share} %) of ${where}, above deletes.maxRatio ${maxRatio}` +
      `${check?.endpoint && check.checked > 0 ? ` (keys missing from the extract that ${check.endpoint} no longer returns)` : ''}; ` +
      'nothing was published and the state cursor was left as it was. If the deletions are real, run again with --allow-deletes (or raise deletes.maxRatio); ' +
      'if the extract was partial (a narrower filter, a source that stopped early), fix that first',
    { code: 'table.deletes_refused' },
  );
}
