/**
 * The one "is this loop making progress" check of the controllers' readiness
 * (host/health.ts): healthy until the loop first marks progress, then while
 * its last mark is recent enough.
 */
export class Progress {
  private last = 0;

  constructor(
    /** How long after the last mark the loop still counts as healthy. */
    private readonly toleranceMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Progress was made now (a pass completed, or the loop started). */
  mark(): void {
    this.last = this.now();
  }

  healthy(): boolean {
    return this.last === 0 || this.now() - this.last < this.toleranceMs;
  }
}
