/**
 * Public catalog endpoints: the price list (public by the spec) and the model catalog.
 *
 * GET /api/v1/models is public too: it describes the service (which models exist and what their
 * inputs are), as the price list and the OpenAPI document already do, and reveals nothing about
 * any account.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Errors, ModelDefinition, ModelField, PriceList } from "@taskmeter/kernel"
import { ChatModel } from "./ChatWire.ts"

export const ModelInfo = Schema.Struct({
  slug: Schema.String,
  category: ModelDefinition.Category,
  title: Schema.String,
  description: Schema.String,
  outputs: Schema.String.annotate({ description: 'What a task produces, e.g. "2 audio assets".' }),
  deprecated: Schema.Boolean,
  fields: Schema.Array(ModelField.FieldInfo),
  inputSchema: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "JSON Schema (draft 2020-12) of the model's `input` object for POST /api/v1/jobs."
  }),
  provider: Schema.NullOr(Schema.String).annotate({
    description:
      'The provider that runs the model\'s tasks: an upstream (e.g. "alpha"), or "simulated" (results generated ' +
      "offline, not by the model); null when none does, and submissions answer EXECUTION_UNAVAILABLE."
  })
}).annotate({ identifier: "Model" })
export type ModelInfo = typeof ModelInfo.Type

export const Models = Schema.Struct({
  models: Schema.Array(ModelInfo),
  object: Schema.Literal("list"),
  data: Schema.Array(ChatModel).annotate({
    description:
      "The chat models, as GET /api/v1/chat/models lists them: what an OpenAI client's models.list() reads " +
      "with its base URL at /api/v1."
  })
}).annotate({ identifier: "Models" })
export type Models = typeof Models.Type

export const CatalogApi = HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("prices", "/api/v1/prices", {
      success: PriceList.PublicPrices,
      error: [Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Current prices and availability",
        description:
          "Per-model USD micro-unit prices with `enabled` and the optional `rateCard`. " +
          "A model that is disabled, has no price or is absent cannot be submitted. No credentials needed."
      })
    ),
    HttpApiEndpoint.get("models", "/api/v1/models", {
      success: Models,
      error: [Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Model catalog",
        description:
          "Every task model with its slug, category, input fields and the JSON Schema of its input (`models`), " +
          "and the chat models in the OpenAI list format (`object`, `data`). No credentials needed."
      })
    )
  )
  .annotate(OpenApi.Description, "Public: prices and models.")
