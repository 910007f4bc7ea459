// The publishes of downloaded bodies running beside the downloads (downloaded-body.ts): at most
// `limit` at once, so memory (bodies held) and open files stay bounded; a download that finishes
// while all are busy waits for one to end before its worker takes the next file. The first error
// a publish throws (the store refusing, not a file's failure: those are recorded by the task) is
// kept and thrown by `settle`, once every publish under way has ended.
export class PublishQueue {
  readonly #limit: number;
  readonly #running = new Set<Promise<void>>();
  #error: { err: unknown } | undefined;

  constructor(limit: number) {
    this.#limit = Math.max(1, limit);
  }

  /** Whether a publish failed: the workers stop taking files. */
  get failed(): boolean {
    return this.#error !== undefined;
  }

  /** Starts `task`; resolves once fewer than `limit` publishes run. */
  async add(task: () => Promise<void>): Promise<void> {
    const run: Promise<void> = task()
      .catch((err: unknown) => {
        this.#error ??= { err };
      })
      .finally(() => this.#running.delete(run));
    this.#running.add(run);
    while (this.#running.size >= this.#limit) await Promise.race(this.#running);
  }

  /** Waits for every publish under way; throws the first error one threw. */
  async settle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running);
    if (this.#error) throw this.#error.err;
  }
}
