/**
 * The operator token: the one credential of the admin RPC service. It is taken from
 * OPERATOR_TOKEN when set, else reused from `<DATA_DIR>/admin.json` (see AdminFile), else made
 * at first start. The server keeps only its SHA-256 in memory and compares presented tokens in
 * constant time; the token is never logged.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Effect, Option, Redacted } from "effect"
import * as AdminFile from "./AdminFile.ts"

/** Tells an operator token apart from an API key (`tm_`) in a config file or a shell history. */
export const PREFIX = "tmop_"

/** 32 random bytes, base64url. */
export const generate = (): Redacted.Redacted<string> =>
  Redacted.make(`${PREFIX}${randomBytes(32).toString("base64url")}`, { label: "OperatorToken" })

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/**
 * A check of presented tokens against `token`. Both sides are hashed first, so the comparison
 * takes the same time whatever the presented length.
 */
export const verifier = (token: Redacted.Redacted<string>): ((presented: string | undefined) => boolean) => {
  const expected = digest(Redacted.value(token))
  return (presented) => presented !== undefined && timingSafeEqual(digest(presented), expected)
}

/** The token of an `Authorization: Bearer <token>` header. */
export const fromAuthorization = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
  return match === null ? undefined : match[1]
}

/** The configured token, else the one kept in the data directory, else a new one. */
export const resolve = (
  dataDir: string,
  configured: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<Redacted.Redacted<string>, AdminFile.AdminFileError> =>
  Option.match(configured, {
    onSome: Effect.succeed,
    onNone: () =>
      AdminFile.read(dataDir).pipe(
        Effect.map((file) => (file === undefined ? generate() : Redacted.make(file.token, { label: "OperatorToken" })))
      )
  })
