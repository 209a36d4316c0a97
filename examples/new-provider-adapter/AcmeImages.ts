/**
 * A third-party adapter in one file: "Acme Images", an imaginary upstream with a two-call
 * asynchronous API (`POST {base}/v1/generations` → `{ id }`, then `GET {base}/v1/generations/{id}`
 * until done or error), serving one catalog model. Everything but Acme's own protocol comes from
 * @taskmeter/providers: the table adapter, the HTTP client, Schema decoding, status classification
 * and typed outputs.
 */
import { Effect, Schema } from "effect"
import type { Provider } from "@taskmeter/kernel"
import { InputFields, JsonBody, Outputs, ProviderConfig, TableAdapter, UpstreamError } from "@taskmeter/providers"

const MODEL = "alpha-2-text-to-image-economy"

const Created = Schema.Struct({ id: Schema.String })
const Generation = Schema.Struct({
  status: Schema.Literals(["queued", "running", "done", "error"]),
  images: Schema.optional(Schema.Array(Schema.Struct({ url: Schema.String }))),
  error: Schema.optional(Schema.String)
})

export const make = (options: ProviderConfig.AdapterOptions): Provider.ProviderV1 => {
  const { baseUrl, apiKey, http } = ProviderConfig.resolve(options, "https://api.acme-images.example")
  const headers = { authorization: `Bearer ${apiKey}` }

  // The table of served models; TableAdapter fails any other before a request is sent.
  return TableAdapter.make(
    { ...options, provider: "acme", models: { [MODEL]: { output: "image" as const } } },
    {
      submit: (_entry, { input }) =>
        Effect.gen(function* () {
          // "submit": a lost connection or an unreadable answer here is OutcomeUnknown.
          const reply = yield* http.send("submit", {
            method: "POST",
            url: `${baseUrl}/v1/generations`,
            headers,
            json: { prompt: InputFields.string(input, "prompt"), aspect: InputFields.string(input, "aspectRatio") }
          })
          const created = yield* JsonBody.decode(Created, reply, "submit", "generation")
          return { _tag: "Accepted" as const, upstreamId: created.id }
        }),
      poll: (entry, { upstreamId }) =>
        Effect.gen(function* () {
          const reply = yield* http.send("poll", {
            method: "GET",
            url: `${baseUrl}/v1/generations/${encodeURIComponent(upstreamId)}`,
            headers
          })
          const generation = yield* JsonBody.decode(Generation, reply, "poll", "generation")
          switch (generation.status) {
            case "queued":
            case "running":
              return { _tag: "Pending" as const }
            case "error":
              return {
                _tag: "Failed" as const,
                errorCode: UpstreamError.ErrorCodes.GenerationFailed,
                message: generation.error ?? "failed"
              }
            case "done":
              return {
                _tag: "Succeeded" as const,
                outputs: (generation.images ?? []).map((image) => Outputs.fromUrl(entry.output, image.url))
              }
          }
        })
    }
  )
}
