// The table's side of the publication protocol (ARCHITECTURE.md, "Publication"): its staged files,
// the layout's commit (the commit point), and what a stop or a revoke takes back. The sink decides
// when (shared/publishing-sink.ts); this says how, for a table.
import { AbortedError, SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import type { Fence } from '../../core/lock.js';
import type { StageContext } from '../../core/stage.js';
import { TABLE_MANIFEST } from './hive-layout.js';
import type { NewVersion, PreviousVersion, PublishedFile, TableLayout } from './table-layout.js';
import { isCommitPoint, type StagedFile, type TableStore } from './table-store.js';

export interface TablePublicationDeps {
  store: TableStore;
  layout: TableLayout;
  ctx: StageContext;
  /** The fence of the table's commit points: the run's lock and the table's. */
  fence(): Fence;
  /** Whether the sink is being destroyed. */
  stopped(): boolean;
  cleanupWarning(failure: Error): void;
}

export class TablePublication {
  readonly #deps: TablePublicationDeps;
  readonly #staged: StagedFile[] = [];
  /** The data files are under their final names (this run's, removed again unless the version stays). */
  #filesCommitted = false;
  /** The layout's commit, once started: a stop while it runs waits for it, then takes it back. */
  #commit: Promise<PublishedFile[]> | undefined;
  /** The commit point passed: readers see this run's version (until a revoke takes it back). */
  #landed = false;
  #revoked = false;
  readonly #outputs: OutputRecord[] = [];

  constructor(deps: TablePublicationDeps) {
    this.#deps = deps;
  }

  get outputs(): readonly OutputRecord[] {
    return this.#outputs;
  }

  get landed(): boolean {
    return this.#landed;
  }

  /** This run's version is the table's and stays so: past its commit point, not taken back. */
  get published(): boolean {
    return this.#landed && !this.#revoked;
  }

  /**
   * Opens the run's side of the table: its journal (every file of this run is named there before
   * it is written), then the layout's previous version, once the layout repaired and swept what
   * killed runs left. `check` may refuse the previous version; an incremental run needs one.
   */
  async open(check: (previous: PreviousVersion) => void): Promise<PreviousVersion | undefined> {
    const { store, layout, ctx } = this.#deps;
    await store.openJournal(ctx.run.id);
    const { previous, removed, repaired, foreign } = await layout.open();
    if (foreign && foreign.length > 0) this.#reportForeign(foreign);
    if (repaired) ctx.events.emit('info', { code: 'table.repaired', message: `table: ${repaired}` });
    if (previous) check(previous);
    if (!previous && ctx.mode.incremental) {
      throw new SinkError(
        `table: ${store.location('')} has no ${layout.name === 'hive' ? TABLE_MANIFEST : `Iceberg version (${layout.commitPoint})`}, but this run is incremental (a state cursor): its snapshot would hold only the records changed since the cursor; ` +
          'run once with --full-refresh to build the table (or point path at the table the state belongs to)',
        { code: 'table.needs_full' },
      );
    }
    if (removed.length > 0) {
      ctx.events.emit('info', {
        code: 'stale_temp_removed',
        message: `removed ${removed.length} file(s) that killed runs left: ${removed.join(', ')}`,
      });
    }
    return previous;
  }

  /** Files in the table's folders the table did not write: left as they are, said once per run. */
  #reportForeign(foreign: readonly string[]): void {
    const shown = foreign.slice(0, 10).join(', ');
    this.#deps.ctx.events.emit('info', {
      code: 'table.foreign_files',
      message: `table ${this.#deps.store.location('')}: left ${foreign.length} file(s) no run of this table wrote (no journal of it names them): ${shown}${foreign.length > 10 ? ', ...' : ''}`,
    });
  }

  /** A staged file the destroy will discard; one opened while the sink was being destroyed goes at once. */
  async stage(rel: string): Promise<StagedFile> {
    const staged = await this.#deps.store.stage(rel);
    if (this.#deps.stopped()) {
      await staged.discard();
      this.#checkStopped();
    }
    this.#staged.push(staged);
    return staged;
  }

  /** Every staged file complete (closed, uploaded), not yet under its final name. */
  async finishFiles(): Promise<void> {
    for (const staged of this.#staged) await staged.finish();
  }

  /**
   * Data files under their final names, then the manifest (the commit point); only while this run
   * holds its locks: a run paused past them publishes nothing. `describe` makes the version once
   * the files' sizes are final. Then the outputs and the version are told (`table.version`).
   */
  async publish(describe: () => NewVersion, stateFile: StagedFile): Promise<void> {
    const { store, layout } = this.#deps;
    await this.#deps.fence().assertHeld();
    this.#filesCommitted = true;
    for (const staged of this.#staged) await staged.commit();
    const version = describe();
    this.#checkStopped();
    this.#commit = layout.publish(version, this.#deps.fence());
    const metadata = await this.#commit;
    this.#landed = true;
    // Stopped while the commit ran: the destroy takes the version back (it waited for this commit).
    this.#checkStopped();
    const sink = 'table';
    const kind = store.kind;
    for (const f of [...version.snapshot, ...version.changes])
      this.#emitOutput({ kind, location: store.location(f.path), rows: f.rows, bytes: f.bytes, sink });
    this.#emitOutput({ kind, location: stateFile.location, rows: 0, bytes: stateFile.file.bytes, sink, role: 'state' });
    for (const m of metadata)
      this.#emitOutput({ kind, location: m.location, rows: 0, bytes: m.bytes ?? 0, sink, role: 'metadata' });
    const files = layout.filesReport?.();
    if (files)
      this.#deps.ctx.events.emit('info', {
        code: 'table.files',
        message: `table ${files.location}: ${files.filesAdded} file(s) written (${files.bytesWritten} bytes), ${files.filesRemoved} replaced; ${files.filesInTable} file(s), ${files.bytesInTable} bytes in the table`,
        files,
      });
    const { mode, runId, date, rows, counts } = version;
    this.#deps.ctx.events.emit('info', {
      code: 'table.version',
      message: `table ${store.location('')}: ${mode} run ${runId} for ${date}: ${rows} rows; ${counts.inserted} inserted, ${counts.updated} updated, ${counts.deleted} deleted, ${counts.unchanged} unchanged`,
      mode,
      counts,
      rows,
    });
  }

  /** What the published version superseded goes, only while the locks are held. */
  async settle(): Promise<void> {
    const { layout, ctx } = this.#deps;
    // A run that lost its lock removes nothing: what its version superseded may be the newer run's now.
    if (await this.#stillHeld('sink.cleanup'))
      await layout.settle((code, message) => ctx.events.emit('warning', { code, message }));
  }

  /**
   * A sibling sink failed after this one published: the earlier `_table.json` comes back (or goes,
   * on a first run) before this run's files are removed, so the manifest never lists a missing file.
   * Nothing it listed was removed yet (that waits for the settle), so the earlier version is whole.
   */
  async revoke(): Promise<void> {
    await this.#takeBack();
    if (this.#revoked) await this.#dropJournal();
  }

  /**
   * Destroyed: a stop or a failure before the run's commit point (`stopped`) takes back what landed
   * or discards what was committed; in every case what is not under a final name goes, and a run
   * that did not publish leaves no journal.
   */
  async stop(stopped: boolean, settling: Promise<void> | undefined): Promise<void> {
    if (stopped) await this.#stopCommit(settling);
    if (!this.#filesCommitted) await this.#discardStaged();
    if (stopped && !this.published) await this.#dropJournal();
  }

  /**
   * A layout commit under way is waited for (it cannot be interrupted half-way: a REST
   * transaction, or two tables one after the other), and a version that landed is taken back, so
   * the run's outcome ("outputs discarded") is what the table shows. Once the sink settled (alone,
   * past its own commit point) the version stands: the settle is waited for and nothing is undone.
   */
  async #stopCommit(settling: Promise<void> | undefined): Promise<void> {
    const landed = await this.#commit?.then(
      () => true,
      () => false,
    );
    if (settling) {
      await settling.catch(() => {});
      return;
    }
    if (landed) this.#landed = true;
    if (this.#landed) await this.#takeBack();
    else if (this.#filesCommitted) await this.#discardStaged();
  }

  /**
   * The earlier version comes back (or none, on a first run), then this run's files go. When the
   * layout cannot restore it, this run's version stays published: its files and outputs stay,
   * and the run's summary lists them.
   */
  async #takeBack(): Promise<void> {
    if (!this.#landed || this.#revoked) return;
    // Restoring the earlier version after a takeover would drop the newer run's.
    if (!(await this.#stillHeld('sink.revoke'))) return;
    const { layout, ctx, store } = this.#deps;
    const restored = await layout.revoke((code, message) => ctx.events.emit('warning', { code, message }));
    if (!restored) {
      ctx.events.emit('warning', {
        code: 'sink.revoke',
        message: `table ${store.location('')}: run ${ctx.run.id} stays published (${layout.commitPoint} could not be restored to the earlier version); its files are kept and listed as the run's outputs`,
      });
      return;
    }
    this.#revoked = true;
    await this.#discardStaged();
    this.#outputs.length = 0;
  }

  /** A run that published nothing and removed its files leaves no journal either (else the next run sweeps it). */
  async #dropJournal(): Promise<void> {
    await this.#deps.store.journal
      ?.dropIfGone(isCommitPoint)
      .catch((err: unknown) => this.#deps.cleanupWarning(err as Error));
  }

  async #discardStaged(): Promise<void> {
    for (const staged of this.#staged)
      await staged.discard().catch((err: unknown) => this.#deps.cleanupWarning(err as Error));
  }

  /** Whether the locks are still held; when not, a warning (`code`) says what was left alone. */
  async #stillHeld(code: 'sink.cleanup' | 'sink.revoke'): Promise<boolean> {
    const { ctx, store } = this.#deps;
    return this.#deps
      .fence()
      .assertHeld()
      .then(
        () => true,
        (err: unknown) => {
          ctx.events.emit('warning', {
            code,
            message: `table ${store.location('')}: left as it is (${(err as Error).message})`,
          });
          return false;
        },
      );
  }

  #emitOutput(output: OutputRecord): void {
    this.#outputs.push(output);
    this.#deps.ctx.events.emit('output', output);
  }

  #checkStopped(): void {
    if (this.#deps.stopped()) throw new AbortedError('the table sink was stopped; nothing was published');
  }
}
