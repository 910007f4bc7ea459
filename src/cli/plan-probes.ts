// The plan of each pipeline (every slice, as --dry-run shows it) gives the progress display its totals
// and ETA. It is made beside the run, never holding it up (an unreachable service fails the run, not a
// plan first); its probes count against the budget like any request, so a run that shows no progress
// (--quiet, level warn) makes none. Until a plan arrives, or without one (a stream source, a failed
// probe), totals come from the sources.
import type { CatalogClient } from '../client/catalog-client.js';
import { RunEvents } from '../events.js';
import type { PlannedStage } from '../core/planned-stage.js';
import { estimateSource, type SourceType } from '../sources/index.js';
import type { PipelineProgress, ProgressHandle } from './progress.js';

export interface PlanProbeOptions {
  /** Plans are made only when progress is shown (level info or debug). */
  enabled: boolean;
}

export class PlanProbes {
  readonly #planning = new AbortController();
  readonly #events = new RunEvents();
  readonly #client: CatalogClient;
  readonly #progress: ProgressHandle;
  readonly #options: PlanProbeOptions;
  readonly #runSignal: AbortSignal;
  readonly #stop = () => this.#planning.abort();

  /** `runSignal`: the run's stop; it stops the probes too. */
  constructor(
    client: CatalogClient,
    progress: ProgressHandle,
    names: readonly string[],
    options: PlanProbeOptions,
    runSignal: AbortSignal,
  ) {
    this.#client = client;
    this.#progress = progress;
    this.#options = options;
    this.#runSignal = runSignal;
    // The probes run beside the extract against the same host: their retries and failures are the
    // extract's too, which says them once, under the pipeline's name. The probes' own are debug detail.
    for (const name of ['retry', 'throttle'] as const)
      this.#events.on(name, (e: object) => progress.log('debug', `plan.${name}`, { pipelines: names, ...e }));
    runSignal.addEventListener('abort', this.#stop, { once: true });
  }

  /** Whether a pipeline's display should wait for a plan before showing a total. */
  get enabled(): boolean {
    return this.#options.enabled;
  }

  /**
   * Plans one pipeline for its display. Called once the run passed its preflight (locks, cursor),
   * with the source as the run sends it: a refused run makes no request.
   */
  start(pipeline: string, source: PlannedStage<'source'>, shown: PipelineProgress): void {
    if (!this.#options.enabled || this.#planning.signal.aborted) {
      shown.planPending = false;
      return;
    }
    void this.#planFor(source).then(
      (planned) => {
        shown.plan = planned;
        shown.planPending = false;
      },
      (err: unknown) => {
        shown.planPending = false;
        if (!this.#planning.signal.aborted)
          this.#progress.log('debug', 'plan.skipped', {
            pipeline,
            message: `no plan for the progress display: ${(err as Error).message}`,
          });
      },
    );
  }

  /** Stops the probes still running (the run is over). */
  stop(): void {
    this.#stop();
    this.#runSignal.removeEventListener('abort', this.#stop);
  }

  /**
   * The source plan of one pipeline, from its source as the run sends it (the run read the state,
   * once, and applied the window): its total records and the requests its extract makes.
   */
  async #planFor(source: PlannedStage<'source'>): Promise<PipelineProgress['plan']> {
    const sp = await estimateSource(this.#client, source.type as SourceType, source.written, {
      signal: this.#planning.signal,
      events: this.#events,
    });
    return { total: sp.total, requests: sp.requests };
  }
}
