/**
 * Standard Webhooks signing: a secret is `whsec_<base64 of 32 random bytes>`; a message is signed
 * as `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` under the secret's
 * bytes, and `webhook-signature` lists one signature per secret in force, space-separated (the
 * new and the previous secret during a rotation's overlap).
 */
import { createHmac, randomBytes } from "node:crypto"

export const SECRET_PREFIX = "whsec_"

/** A new signing secret. */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString("base64")}`

const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")

/** `v1,<signature>` of one message under one secret. */
export const sign = (secret: string, id: string, timestampSeconds: number, body: string): string =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

export interface SignedHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

/** The three headers of a delivery signed under every secret given (at least one). */
export const headers = (secrets: ReadonlyArray<string>, id: string, timestampSeconds: number, body: string): SignedHeaders => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(" ")
})
