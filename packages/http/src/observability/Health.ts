/**
 * GET /healthz (liveness: answers while the process serves, asks nothing) and GET /readyz
 * (readiness: the store answers with every migration of this release, and the in-process
 * workers, when there are any, beat within `STALE_HEARTBEAT_MS`). Unauthenticated, outside
 * /api/v1. Ready is 200 with each check's state; not ready is 503 API_UNAVAILABLE naming the
 * failing checks in `error`.
 */
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Heartbeat, StoreHealth } from "@taskmeter/kernel"

export const LIVENESS_PATH = "/healthz"
export const READINESS_PATH = "/readyz"

/** Workers beat at least once per idle wait (1 s by default): a minute of silence is a stuck loop. */
export const STALE_HEARTBEAT_MS = 60_000

/** How long the store may take to answer a readiness check. */
const STORE_TIMEOUT_MS = 2_000

type Check = "ok" | string

const storeCheck = (health: StoreHealth.StoreHealth["Service"]): Effect.Effect<Check> =>
  health.check.pipe(
    Effect.timeoutOption(STORE_TIMEOUT_MS),
    Effect.map(Option.match({ onNone: () => `no answer within ${STORE_TIMEOUT_MS} ms`, onSome: () => "ok" as Check })),
    Effect.catch((error) => Effect.succeed(error.message))
  )

const workersCheck = (heartbeat: Option.Option<Heartbeat.Heartbeat["Service"]>): Effect.Effect<Check | undefined> =>
  Option.match(heartbeat, {
    onNone: () => Effect.succeed(undefined),
    onSome: (beats) =>
      Effect.flatMap(beats.last, (last) =>
        Effect.clockWith((clock) => {
          if (last === undefined) return Effect.succeed("the workers have not started")
          const silentMs = clock.currentTimeMillisUnsafe() - last
          return Effect.succeed(
            silentMs <= STALE_HEARTBEAT_MS ? "ok" : `the workers' last heartbeat was ${Math.round(silentMs / 1000)} s ago`
          )
        })
      )
  })

const readiness = (health: StoreHealth.StoreHealth["Service"], heartbeat: Option.Option<Heartbeat.Heartbeat["Service"]>) =>
  Effect.gen(function* () {
    const store = yield* storeCheck(health)
    const workers = yield* workersCheck(heartbeat)
    const checks = { store, ...(workers === undefined ? {} : { workers }) }
    const failing = Object.entries(checks).filter(([, state]) => state !== "ok")
    return failing.length === 0
      ? HttpServerResponse.jsonUnsafe({ status: "ready", checks })
      : HttpServerResponse.jsonUnsafe(
          {
            code: "API_UNAVAILABLE",
            error: `Not ready: ${failing.map(([name, state]) => `${name}: ${state}`).join("; ")}.`
          },
          { status: 503 }
        )
  })

/** Both routes on the HttpRouter in context; readiness asks the Heartbeat only if there is one. */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const health = yield* StoreHealth.StoreHealth
    const heartbeat = yield* Effect.serviceOption(Heartbeat.Heartbeat)
    yield* router.add("GET", LIVENESS_PATH, HttpServerResponse.jsonUnsafe({ status: "live" }))
    yield* router.add("GET", READINESS_PATH, readiness(health, heartbeat))
  })
)

const checks = { type: "object", additionalProperties: { type: "string" }, description: "Each check: `ok`, or why not." }

/** The OpenAPI paths of both routes. */
export const openApiPaths = {
  [LIVENESS_PATH]: {
    get: {
      tags: ["health"],
      operationId: "health.live",
      summary: "Liveness: the process serves requests",
      description: "Asks nothing else; for a supervisor deciding whether to restart the process.",
      security: [],
      responses: {
        "200": {
          description: "Live.",
          content: { "application/json": { schema: { type: "object", properties: { status: { const: "live" } } } } }
        }
      }
    }
  },
  [READINESS_PATH]: {
    get: {
      tags: ["health"],
      operationId: "health.ready",
      summary: "Readiness: the store answers, its migrations are current, the in-process workers beat",
      description: "For a load balancer deciding whether to send traffic here.",
      security: [],
      responses: {
        "200": {
          description: "Ready.",
          content: {
            "application/json": {
              schema: { type: "object", properties: { status: { const: "ready" }, checks }, required: ["status", "checks"] }
            }
          }
        },
        "503": {
          description: "API_UNAVAILABLE: not ready; `error` names each failing check and why.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } }
        }
      }
    }
  }
}
