/**
 * Password hashing with node:crypto's scrypt. A hash is self-describing,
 * `scrypt$<N>$<r>$<p>$<salt>$<key>` (base64url salt and key), so the parameters can be raised
 * later: `verify` uses the ones stored with the hash, `needsRehash` says a hash was made with
 * weaker ones than `current`. Comparison is in constant time.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"

export interface Parameters {
  /** CPU/memory cost, a power of two. */
  readonly N: number
  readonly r: number
  readonly p: number
}

/** OWASP's scrypt floor (2^17 would be its first choice; 2^15 keeps a sign-in near 50 ms on a small machine). */
export const current: Parameters = { N: 2 ** 15, r: 8, p: 1 }

const KEY_LENGTH = 32
const SALT_LENGTH = 16

export const MIN_LENGTH = 10
export const MAX_LENGTH = 256

/** Why a new password is refused, or undefined when it is acceptable. */
export const problem = (password: string): string | undefined =>
  password.length < MIN_LENGTH
    ? `The password must have at least ${MIN_LENGTH} characters.`
    : password.length > MAX_LENGTH
      ? `The password may have at most ${MAX_LENGTH} characters.`
      : undefined

const derive = (password: string, salt: Buffer, parameters: Parameters): Effect.Effect<Buffer> =>
  Effect.callback<Buffer>((resume) => {
    scrypt(
      password.normalize("NFKC"),
      salt,
      KEY_LENGTH,
      { ...parameters, maxmem: 256 * parameters.N * parameters.r },
      (error, key) => resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

export const hash = (password: string, parameters: Parameters = current): Effect.Effect<string> => {
  const salt = randomBytes(SALT_LENGTH)
  return Effect.map(
    derive(password, salt, parameters),
    (key) => `scrypt$${parameters.N}$${parameters.r}$${parameters.p}$${salt.toString("base64url")}$${key.toString("base64url")}`
  )
}

interface Parsed {
  readonly parameters: Parameters
  readonly salt: Buffer
  readonly key: Buffer
}

const parse = (stored: string): Parsed | undefined => {
  const [scheme, N, r, p, salt, key] = stored.split("$")
  if (scheme !== "scrypt" || key === undefined) return undefined
  return {
    parameters: { N: Number(N), r: Number(r), p: Number(p) },
    salt: Buffer.from(salt!, "base64url"),
    key: Buffer.from(key, "base64url")
  }
}

/** A hash of no one's password, verified against when there is no user, so that both take as long. */
const dummy = `scrypt$${current.N}$${current.r}$${current.p}$${Buffer.alloc(SALT_LENGTH).toString("base64url")}$${Buffer.alloc(KEY_LENGTH).toString("base64url")}`

/** Whether `password` matches `stored`; with no stored hash it spends the same time and answers false. */
export const verify = (password: string, stored: string | null): Effect.Effect<boolean> => {
  const parsed = parse(stored ?? dummy) ?? parse(dummy)!
  return Effect.map(
    derive(password, parsed.salt, parsed.parameters),
    (key) => stored !== null && key.length === parsed.key.length && timingSafeEqual(key, parsed.key)
  )
}

/** Whether `stored` was made with weaker parameters than `wanted`. */
export const needsRehash = (stored: string, wanted: Parameters = current): boolean => {
  const parsed = parse(stored)
  return (
    parsed === undefined || parsed.parameters.N < wanted.N || parsed.parameters.r < wanted.r || parsed.parameters.p < wanted.p
  )
}
