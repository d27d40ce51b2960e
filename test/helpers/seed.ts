/**
 * Seeded randomness for randomized tests: the seed comes from
 * `CCM_TEST_SEED` (to replay a failure) or is drawn and reported, so every
 * failure message can name the seed that reproduces it.
 */
import { randomInt } from 'node:crypto';

export const SEED_ENV = 'CCM_TEST_SEED';

export interface SeededRandom {
  seed: number;
  /** Uniform in [0, 1), deterministic for the seed (mulberry32). */
  random: () => number;
  /** `seed=N (replay with CCM_TEST_SEED=N)`, for logs and failure messages. */
  describe: string;
}

/** A generator seeded from CCM_TEST_SEED, else from a drawn 32-bit seed. */
export function seededRandom(env: NodeJS.ProcessEnv = process.env): SeededRandom {
  const fromEnv = env[SEED_ENV]?.trim();
  const seed = fromEnv ? Number(fromEnv) >>> 0 : randomInt(0, 2 ** 32);
  let a = seed;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { seed, random, describe: `seed=${seed} (replay with ${SEED_ENV}=${seed})` };
}
