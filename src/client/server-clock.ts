// The API's clock, as its answers tell it (the HTTP `Date` header, RFC 9110 §6.6.1), so that a
// run's cursor hands over at the API's time and not at this machine's, which may run seconds
// ahead or behind (docs/changing-catalog.md, "The API's clock").
//
// A `Date` header is the second in which the answer was made, truncated; it is read here after
// the answer arrived. So each answer says the API's clock was at least `date - arrival` ahead of
// ours: a lower bound of the true offset. The largest bound seen is the closest one, and still
// never later than the API's true time, which is the side a cursor must err on (a cursor too
// early reads a few records again; one too late misses them for good).

/** How far off the API's clock is from this machine's, learnt from the answers' `Date` headers. */
export class ServerClock {
  #offsetMs: number | undefined;

  /** Notes one answer's `Date` header, received at `localMs` (this machine's clock). */
  observe(date: unknown, localMs = Date.now()): void {
    if (typeof date !== 'string') return;
    const serverMs = Date.parse(date);
    if (!Number.isFinite(serverMs)) return;
    const offset = serverMs - localMs;
    if (this.#offsetMs === undefined || offset > this.#offsetMs) this.#offsetMs = offset;
  }

  /** The API's clock minus this machine's, in ms (never more than the truth); undefined before any answer. */
  get offsetMs(): number | undefined {
    return this.#offsetMs;
  }

  /** `local` (this machine's time) on the API's clock, never later than the API's true time then. */
  toServer(local: Date): Date {
    return this.#offsetMs === undefined ? local : new Date(local.getTime() + this.#offsetMs);
  }
}
