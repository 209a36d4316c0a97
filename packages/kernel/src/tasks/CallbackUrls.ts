/**
 * Per-task callback URLs for upstreams that call back when a job ends:
 * `<baseUrl>/callbacks/v1/<accountId>/<taskId>/<token>`, the token HMAC-SHA256 of the account and
 * task ids under a key derived from the signing secret, checked in constant time (the previous
 * secret too). Sent as the upstream's client reference, so a callback names our task even when the
 * submit's answer was lost. Off (no URL, nothing verifies) unless a layer turns it on.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Context, Layer, Redacted } from "effect"
import type { AccountId, TaskId } from "../domain/Ids.ts"

export const PATH_PREFIX = "/callbacks/v1/"

export interface Options {
  /** The public origin an upstream reaches this service at, e.g. https://api.example.com. */
  readonly baseUrl: string
  /** The signing secret (the media links' one); callback tokens use a key derived from it. */
  readonly secret: Redacted.Redacted<string>
  /** The secret before the last rotation: URLs it signed still verify. */
  readonly previousSecret?: Redacted.Redacted<string> | undefined
}

export interface Service {
  /** The URL an upstream calls back for the task; undefined when callbacks are off. */
  readonly urlFor: (task: { readonly id: TaskId; readonly accountId: AccountId }) => string | undefined
  /** Whether `token` is the one `urlFor` gives for this account and task. */
  readonly verify: (accountId: string, taskId: string, token: string) => boolean
}

const off: Service = { urlFor: () => undefined, verify: () => false }

/** Callback URLs in force: off unless a layer provides them. */
export const CallbackUrls = Context.Reference<Service>("@taskmeter/kernel/CallbackUrls", { defaultValue: () => off })

const tokenOf = (secret: Redacted.Redacted<string>, accountId: string, taskId: string): Buffer => {
  const key = createHmac("sha256", Redacted.value(secret)).update("taskmeter provider callbacks v1").digest()
  return createHmac("sha256", key).update(`${accountId}\n${taskId}`).digest()
}

export const make = (options: Options): Service => {
  const base = options.baseUrl.replace(/\/+$/, "")
  const secrets = options.previousSecret === undefined ? [options.secret] : [options.secret, options.previousSecret]
  return {
    urlFor: (task) =>
      `${base}${PATH_PREFIX}${encodeURIComponent(task.accountId)}/${encodeURIComponent(task.id)}/${tokenOf(options.secret, task.accountId, task.id).toString("base64url")}`,
    verify: (accountId, taskId, token) => {
      const given = Buffer.from(token, "base64url")
      // Every secret is compared, so the time taken does not tell which one matched.
      let valid = false
      for (const secret of secrets) {
        const expected = tokenOf(secret, accountId, taskId)
        valid = (given.length === expected.length && timingSafeEqual(given, expected)) || valid
      }
      return valid
    }
  }
}

export const layer = (options: Options) => Layer.succeed(CallbackUrls, make(options))
