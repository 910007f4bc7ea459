// A sink's side of the publication protocol (ARCHITECTURE.md, "Publication"): the tee holds every
// sink of a run with its data complete, lets them all publish once all got there, and settles them
// once all published (or revokes those that published when a sibling failed). Every sink that can
// be held (RecordSink, TableSink) gets its hold from here, so the steps are the same for all.
import type { HeldPublication } from '../core/stage.js';

export class PublicationHold {
  readonly #ready: Promise<void>;
  #markReady!: () => void;
  #fail!: (err: Error) => void;
  readonly #decision: Promise<void>;
  #go!: () => void;
  #stop!: (err: Error) => void;
  #settled = false;

  constructor() {
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#markReady = resolve;
      this.#fail = reject;
    });
    this.#ready.catch(() => {});
    this.#decision = new Promise<void>((resolve, reject) => {
      this.#go = resolve;
      this.#stop = reject;
    });
    this.#decision.catch(() => {});
  }

  /** What the tee holds: `settle` runs the sink's last steps once every sink of the run published. */
  handle(settle: () => Promise<void>): HeldPublication {
    return {
      ready: this.#ready,
      publish: () => this.#go(),
      settle: () => {
        this.#settled = true;
        return settle();
      },
    };
  }

  /** The sink's data is complete: it waits for `publish` (or a stop). */
  async waitForPublish(): Promise<void> {
    this.#markReady();
    await this.#decision;
  }

  /** The sink failed or was stopped: the tee learns it, and a sink waiting to publish stops waiting. */
  fail(err: Error): void {
    this.#fail(err);
    this.#stop(err);
  }

  /** Whether the tee already settled the sink (a later destroy leaves its lock to nobody else). */
  get settled(): boolean {
    return this.#settled;
  }
}
