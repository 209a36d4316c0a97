/**
 * The `{ code, msg, data }` envelope of the task-market style APIs (the market's createTask and
 * recordInfo, the song API): the HTTP status is often 200 and the real status is `code`, which
 * is classified like an HTTP status (429 rate limited, 5xx and 455 "service unavailable"
 * retryable, other 4xx terminal).
 */
import { Effect, Schema } from "effect"
import { Provider } from "@taskmeter/kernel"
import * as JsonBody from "../utils/JsonBody.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"

const Envelope = Schema.Struct({
  code: Schema.Number,
  msg: Schema.optional(Schema.NullOr(Schema.String)),
  data: Schema.optional(Schema.Unknown)
})

/** The market's "service unavailable / maintenance" code. */
const UNAVAILABLE = 455

/** The envelope's `data`, decoded with `schema`, or the classified error of its `code`. */
export const decode: JsonBody.Decode = (schema, reply, step, what) =>
  Effect.flatMap(JsonBody.decode(Envelope, reply, step, what), (envelope) => {
    if (envelope.code !== 200) {
      const message = envelope.msg ?? undefined
      return Effect.fail(
        envelope.code === UNAVAILABLE
          ? new Provider.ProviderError({
              reason: "Retryable",
              message: `upstream unavailable (${UNAVAILABLE}): ${message}`,
              status: UNAVAILABLE
            })
          : UpstreamError.fromStatus(envelope.code, { message })
      )
    }
    return JsonBody.validate(schema, envelope.data, step, `${what}: data`)
  })
