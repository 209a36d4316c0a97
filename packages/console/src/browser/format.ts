/** Display helpers: USD from integer micros, dates, and plain labels. */

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

export const dateTime = (iso: string): string =>
  `${new Date(iso).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" })} UTC`

export const day = (iso: string): string => iso.slice(0, 10)
