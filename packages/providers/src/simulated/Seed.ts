/**
 * Determinism for the simulated provider: a seed is the SHA-256 of the model and its input
 * (keys sorted, so equal inputs give equal seeds), and a small PRNG (mulberry32) draws from it.
 */
import { createHash } from "node:crypto"

const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** 32 lower-case hex digits identifying the model and input. */
export const of = (model: string, input: unknown): string =>
  createHash("sha256")
    .update(`${model}\n${canonical(input)}`)
    .digest("hex")
    .slice(0, 32)

/** Where the seed falls in [0, 1): the failure draw. */
export const fraction = (seed: string): number => Number.parseInt(seed.slice(0, 8), 16) / 0x1_0000_0000

export interface Random {
  /** In [0, 1). */
  readonly next: () => number
  /** An integer in [0, n). */
  readonly int: (n: number) => number
  readonly pick: <A>(items: ReadonlyArray<A>) => A
}

/** A PRNG from a seed and a stream name, so that separate uses do not share draws. */
export const random = (seed: string, stream = ""): Random => {
  let state = Number.parseInt(createHash("sha256").update(`${seed}/${stream}`).digest("hex").slice(0, 8), 16) >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000
  }
  const int = (n: number) => Math.floor(next() * n)
  return { next, int, pick: (items) => items[int(items.length)]! }
}
