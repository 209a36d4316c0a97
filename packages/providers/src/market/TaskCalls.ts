/**
 * The two calls of the task-market style APIs (createTask / recordInfo, the song API's generate /
 * record-info) in their `{ code, msg, data }` envelope: a POST creating a task (`{ taskId }`) and a
 * GET of `…?taskId=` reporting on it, with `Bearer <key>`. The task's own callback URL is sent as
 * `callBackUrl` when callbacks are on; else a configured one, carrying the task's reference as its
 * `reference` query parameter, so an operator can match a job by hand.
 */
import { Effect, Schema } from "effect"
import type { Provider } from "@taskmeter/kernel"
import type * as JsonBody from "../utils/JsonBody.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as Envelope from "./Envelope.ts"

export interface Options extends ProviderConfig.AdapterOptions {
  /** An https endpoint of ours for completion callbacks; the adapter polls either way. */
  readonly callBackUrl?: string | undefined
}

export interface TaskCalls {
  /** POSTs `body` and the callback URL to `path`; the created task's id. */
  readonly create: (
    path: string,
    body: object,
    request: Pick<Provider.SubmitRequest, "reference" | "callbackUrl">,
    what: string
  ) => Effect.Effect<string, Provider.ProviderError>
  /** GETs `path?taskId=…`; the record, decoded with `schema`. */
  readonly record: <S extends JsonBody.Decodable>(
    path: string,
    taskId: string,
    schema: S,
    what: string
  ) => Effect.Effect<S["Type"], Provider.ProviderError>
}

const Created = Schema.Struct({ taskId: Schema.String.check(Schema.isMinLength(1)) })

export const make = (options: Options, defaultBaseUrl: string): TaskCalls => {
  const { baseUrl, apiKey, http } = ProviderConfig.resolve(options, defaultBaseUrl)
  const headers = { authorization: `Bearer ${apiKey}` }

  const callBackUrl = ({ callbackUrl, reference }: Pick<Provider.SubmitRequest, "reference" | "callbackUrl">) => {
    if (callbackUrl !== undefined) return { callBackUrl: callbackUrl }
    if (options.callBackUrl === undefined) return {}
    const url = new URL(options.callBackUrl)
    url.searchParams.set("reference", reference)
    return { callBackUrl: url.href }
  }

  return {
    create: (path, body, request, what) =>
      Effect.gen(function* () {
        const reply = yield* http.send("submit", {
          method: "POST",
          url: `${baseUrl}${path}`,
          headers,
          json: { ...body, ...callBackUrl(request) }
        })
        return (yield* Envelope.decode(Created, reply, "submit", what)).taskId
      }),
    record: (path, taskId, schema, what) =>
      Effect.gen(function* () {
        const url = new URL(`${baseUrl}${path}`)
        url.searchParams.set("taskId", taskId)
        const reply = yield* http.send("poll", { method: "GET", url: url.href, headers })
        return yield* Envelope.decode(schema, reply, "poll", what)
      })
  }
}
