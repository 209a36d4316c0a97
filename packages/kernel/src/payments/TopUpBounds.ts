/**
 * The top-up amounts an operator offers: a minimum, a maximum and preset choices, USD micros in
 * whole cents (what processors charge). `check` says what to fix about an amount outside them.
 */
import { MICROS_PER_USD } from "../domain/Money.ts"

export interface TopUpBounds {
  readonly minMicros: number
  readonly maxMicros: number
  /** Offered as buttons; each within min..max. */
  readonly presetsMicros: ReadonlyArray<number>
}

const CENT = MICROS_PER_USD / 100

const usd = (micros: number) => `$${(micros / MICROS_PER_USD).toFixed(2)}`

/** The problem with the bounds themselves (for configuration), or undefined. */
export const invalid = (bounds: TopUpBounds): string | undefined => {
  const all = [bounds.minMicros, bounds.maxMicros, ...bounds.presetsMicros]
  if (!all.every((micros) => Number.isSafeInteger(micros) && micros > 0 && micros % CENT === 0)) {
    return "top-up amounts must be positive whole cents"
  }
  if (bounds.minMicros > bounds.maxMicros) return "the top-up minimum exceeds the maximum"
  if (bounds.presetsMicros.some((micros) => micros < bounds.minMicros || micros > bounds.maxMicros)) {
    return "every top-up preset must lie between the minimum and the maximum"
  }
  return undefined
}

/** Why the amount cannot be a top-up, or undefined. */
export const check = (bounds: TopUpBounds, amountMicros: number): string | undefined =>
  Number.isSafeInteger(amountMicros) &&
  amountMicros % CENT === 0 &&
  amountMicros >= bounds.minMicros &&
  amountMicros <= bounds.maxMicros
    ? undefined
    : `amountMicros must be whole cents from ${bounds.minMicros} (${usd(bounds.minMicros)}) to ${bounds.maxMicros} (${usd(bounds.maxMicros)})`
