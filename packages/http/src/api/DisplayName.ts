/**
 * The name a user gives a credential (an API key, a passkey) to tell it from others: 1 to `max`
 * characters, not only spaces, without control characters (it is shown in pages and logs).
 */
import { Schema } from "effect"

export const make = (max: number, what: string) => {
  const rule = `must be 1 to ${max} characters, not only spaces, without control characters`
  return Schema.String.check(
    Schema.makeFilter((name: string) => name.trim().length > 0 && name.length <= max && !/\p{Cc}/u.test(name), {
      message: rule
    })
  ).annotate({ description: `What the user calls the ${what}, to tell it from others; ${rule}.` })
}
