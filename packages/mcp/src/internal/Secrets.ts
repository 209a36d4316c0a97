/**
 * Random credentials and their hashes. Every secret is 32 random bytes in base64url behind a
 * prefix that says what it is (so a leaked value can be recognised by secret scanners and by
 * people); stores keep only the SHA-256.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

export const PREFIX = {
  accessToken: "tmat_",
  refreshToken: "tmrt_",
  authorizationCode: "tmac_",
  clientSecret: "tmcs_",
  signInCode: "tmsi_"
} as const

export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString("base64url")}`

export const sha256Hex = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/** Compares two strings in time that depends only on their lengths. */
export const safeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && timingSafeEqual(left, right)
}

/** RFC 7636 §4.1: 43 to 128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/** An S256 challenge is the base64url SHA-256 of a verifier: 43 characters. */
export const CHALLENGE = /^[A-Za-z0-9_-]{43}$/

/** Whether `verifier` is well formed and its S256 transform is `challenge` (RFC 7636 §4.6). */
export const verifyPkce = (verifier: string, challenge: string): boolean =>
  VERIFIER.test(verifier) && safeEqual(createHash("sha256").update(verifier, "ascii").digest("base64url"), challenge)
