/**
 * Nearest-rank percentiles of latency samples, shared by the benchmarks so that every figure in
 * bench/RESULTS.md is computed the same way.
 */

/** The nearest-rank `p`th percentile (0 < p <= 100) of ascending `sorted`; NaN when it is empty. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

export interface Summary {
  readonly count: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** p50, p99 and max of unsorted samples (the array is sorted in place). */
export const summarize = (samples: Array<number>): Summary => {
  samples.sort((a, b) => a - b)
  return {
    count: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: percentile(samples, 100)
  }
}
