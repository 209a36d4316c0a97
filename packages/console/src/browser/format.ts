/** Display helpers: USD from integer micros (exact, or as money reads), dates, and plain labels. */

const MICROS_PER_USD = 1_000_000

/** `$1.234567`, trailing zeros trimmed to cents: `$25.00`, `$0.025`. */
export const usd = (micros: number): string => {
  const sign = micros < 0 ? "-" : ""
  const abs = Math.abs(micros)
  const whole = Math.floor(abs / MICROS_PER_USD)
  const fraction = String(abs % MICROS_PER_USD)
    .padStart(6, "0")
    .replace(/0+$/u, "")
    .padEnd(2, "0")
  return `${sign}$${whole.toLocaleString("en-US")}.${fraction}`
}

/** An amount as typed into a USD field, the reverse of Money.parseUsd: `0.08`, `12`. */
export const usdInput = (micros: number): string =>
  usd(micros)
    .slice(1)
    .replace(/,/gu, "")
    .replace(/\.?0+$/u, "")

const MICROS_PER_CENT = 10_000

/**
 * USD as people read money: dollars and cents, rounded half away from zero (`$25.00`, `$1.23`);
 * an amount under a cent shows its micros (`$0.0025`, `$0.000001`) rather than `$0.00`.
 */
export const money = (micros: number): string => {
  const abs = Math.abs(micros)
  if (abs > 0 && abs < MICROS_PER_CENT) return usd(micros)
  const cents = Math.round(abs / MICROS_PER_CENT)
  const sign = micros < 0 && cents > 0 ? "-" : ""
  return `${sign}$${Math.floor(cents / 100).toLocaleString("en-US")}.${String(cents % 100).padStart(2, "0")}`
}

export const dateTime = (iso: string): string =>
  `${new Date(iso).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" })} UTC`

export const day = (iso: string): string => iso.slice(0, 10)
