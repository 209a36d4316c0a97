/**
 * The OpenAPI 3.1 document served at GET /api/openapi.json: generated from the API definition
 * (the schemas the server decodes and encodes with), with the body of POST /api/v1/jobs made
 * exact for the catalog in force: one request schema per model, discriminated by `model`, whose
 * `input` is that model's JSON Schema exactly as the Catalog derives it from the schema that
 * validates submissions.
 */
import { OpenApi } from "effect/http-api"
import type { Catalog } from "@taskmeter/kernel"
import { Api } from "./Api.ts"
import { JOB_REQUEST_IDENTIFIER } from "./api/JobsApi.ts"

type Json = Record<string, any>

const JOBS_PATH = "/api/v1/jobs"

/** Component name of a model's request body; slugs are already valid component keys. */
export const requestComponent = (slug: string): string => `JobRequest.${slug}`

const requestOf = (model: Catalog.ModelDefinition, envelope: Json): Json => ({
  type: "object",
  title: model.title,
  description: model.description,
  properties: {
    model: { type: "string", const: model.slug },
    input: model.jsonSchema,
    expectedPriceMicros: envelope.properties.expectedPriceMicros
  },
  required: ["model", "input"],
  additionalProperties: false
})

/** The document for an API serving the given models. */
export const make = (models: ReadonlyArray<Catalog.ModelDefinition>): OpenApi.OpenAPISpec => {
  const spec = OpenApi.fromApi(Api) as Json
  const envelope: Json = spec.components.schemas[JOB_REQUEST_IDENTIFIER]
  for (const model of models) {
    spec.components.schemas[requestComponent(model.slug)] = requestOf(model, envelope)
  }
  const ref = (slug: string) => `#/components/schemas/${requestComponent(slug)}`
  spec.paths[JOBS_PATH].post.requestBody = {
    required: true,
    content: {
      "application/json": {
        schema: {
          oneOf: models.map((model) => ({ $ref: ref(model.slug) })),
          discriminator: {
            propertyName: "model",
            mapping: Object.fromEntries(models.map((model) => [model.slug, ref(model.slug)]))
          }
        }
      }
    }
  }
  delete spec.components.schemas[JOB_REQUEST_IDENTIFIER]
  return spec as OpenApi.OpenAPISpec
}
