/**
 * A bounded wait on a promise, in a module of its own so that the host can
 * use it without loading the SDK's server side (and its dependencies).
 */

/** Resolves true if `p` settles within `ms`, false otherwise; never rejects. */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), Math.max(0, ms));
    p.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}
