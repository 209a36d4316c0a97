/**
 * Money is an integer count of USD micro-units (1 USD = 1_000_000 micros) everywhere:
 * in prices, reservations, charges and balances. No float ever touches a money path;
 * dollars appear only at the edges, parsed from and printed to decimal strings.
 */
import { Schema } from "effect"

export const MICROS_PER_USD = 1_000_000

export const Micros = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER))
  .pipe(Schema.brand("Micros"))
  .annotate({
    description: "An amount in integer USD micro-units (1 USD = 1000000)."
  })
export type Micros = typeof Micros.Type

/** Brands a number as Micros, throwing on anything but a non-negative safe integer (a programming error). */
export const micros = (value: number): Micros => {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`Not an amount of micro-units: ${value}`)
  }
  return value as Micros
}

export const ZERO: Micros = micros(0)

export const add = (a: Micros, b: Micros): Micros => micros(a + b)

/** a - b, which must not go below zero. */
export const subtract = (a: Micros, b: Micros): Micros => micros(a - b)

/** amount × a whole quantity, refusing results past Number.MAX_SAFE_INTEGER. */
export const multiply = (amount: Micros, quantity: number): Micros => micros(amount * quantity)

const USD_DECIMAL = /^(\d{1,12})(?:\.(\d{1,6}))?$/

/** The largest amount in USD that `parseUsd` takes: Number.MAX_SAFE_INTEGER micros. */
export const MAX_USD = "9007199254.740991"

/**
 * Parses a decimal USD string such as "12", "0.5" or "3.141592" exactly, with no float
 * arithmetic. Returns undefined for anything else: negative, more than six decimals, an
 * exponent, or more than `MAX_USD` (past that micros are no longer exact numbers).
 */
export const parseUsd = (text: string): Micros | undefined => {
  const match = USD_DECIMAL.exec(text.trim())
  if (match === null) return undefined
  const amount = BigInt(match[1]!) * BigInt(MICROS_PER_USD) + BigInt((match[2] ?? "").padEnd(6, "0"))
  return amount <= BigInt(Number.MAX_SAFE_INTEGER) ? micros(Number(amount)) : undefined
}

/** Formats micros as a decimal USD string with six places, e.g. 1500000 -> "1.500000". */
export const formatUsd = (amount: number): string => {
  const sign = amount < 0 ? "-" : ""
  const abs = Math.abs(amount)
  const whole = Math.floor(abs / MICROS_PER_USD)
  const fraction = String(abs % MICROS_PER_USD).padStart(6, "0")
  return `${sign}${whole}.${fraction}`
}
