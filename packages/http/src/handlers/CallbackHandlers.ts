/**
 * POST /callbacks/v1/{accountId}/{taskId}/{token}: an upstream telling us a job ended. The token
 * (CallbackUrls) is checked first, in constant time; a wrong one is 404 JOB_NOT_FOUND and nothing is
 * read. The body only names the upstream job (the adapter's `callback`); the Reconciler then polls
 * it and settles the task at once (200), or leaves it to the worker while the job runs (202). A
 * finished task answers 200 unchanged, so replays are harmless. A raw route outside the API.
 */
import { Effect, Fiber, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { CallbackUrls, Errors, Executors, Ids, Reconciler, TaskStore } from "@taskmeter/kernel"
import { toApiUnavailable } from "./StoreFailures.ts"

/** The route's path, in the OpenAPI document's form. */
export const PATH = `${CallbackUrls.PATH_PREFIX}{accountId}/{taskId}/{token}`

/** The largest callback body read; upstreams send a job record, well under this. */
export const MAX_BODY_BYTES = 1024 * 1024

/**
 * How long a callback waits for the settlement (the results' download included) before it answers
 * 202; the settlement goes on regardless, apart from the request, so an upstream that hangs up
 * early (fal waits 15 s) does not stop it.
 */
export const SETTLE_WAIT_MS = 10_000

const notFound = new Errors.JobNotFound({
  message: "No task is reached at this callback URL: it is unknown or altered. Each URL is signed for one task."
})

const invalid = (message: string) => new Errors.InvalidRequest({ message })

const answer = (status: number, task: { readonly id: string; readonly status: string }, settled: boolean) =>
  HttpServerResponse.jsonUnsafe({ taskId: task.id, status: task.status, settled }, { status })

/** The route, on the HttpRouter in context. */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const store = yield* TaskStore.TaskStore
    yield* router.add("POST", `${CallbackUrls.PATH_PREFIX}:accountId/:taskId/:token`, (request) =>
      Effect.gen(function* () {
        const callbacks = yield* CallbackUrls.CallbackUrls
        const { accountId, taskId, token } = (yield* HttpRouter.params) as Record<string, string | undefined>
        if (accountId === undefined || taskId === undefined || token === undefined) return yield* notFound
        if (!callbacks.verify(accountId, taskId, token)) return yield* notFound
        if (!Ids.isTaskId(taskId)) return yield* notFound
        const task = yield* store.get(accountId as Ids.AccountId, taskId)
        if (task === undefined) return yield* notFound
        if (task.status === "succeeded" || task.status === "failed") return answer(200, task, false)

        const declared = Number(request.headers["content-length"] ?? NaN)
        if (declared > MAX_BODY_BYTES) return yield* invalid(`A callback body is at most ${MAX_BODY_BYTES} bytes.`)
        const text = yield* Effect.orElseSucceed(request.text, () => "")
        if (text.length > MAX_BODY_BYTES) return yield* invalid(`A callback body is at most ${MAX_BODY_BYTES} bytes.`)
        const body = yield* Effect.try({
          try: () => JSON.parse(text) as unknown,
          catch: () => invalid("A callback body must be JSON.")
        })
        // Servers composed without executors (tests of the API alone) have no upstream to call back.
        const executors = yield* Effect.serviceOption(Executors.Executors)
        if (executors._tag === "None") return yield* notFound
        const callback = executors.value.adapterFor(task.model)?.callback
        if (callback === undefined) return yield* invalid(`The upstream of ${task.model} does not call back.`)
        const upstreamId = yield* callback({ model: task.model, input: task.input, body }).pipe(
          Effect.mapError((error) => invalid(`The callback could not be read: ${error.message}`))
        )
        if (upstreamId === undefined) return yield* invalid("The callback body names no upstream job.")

        const reconciler = yield* Reconciler.make().pipe(Effect.provideService(Executors.Executors, executors.value))
        const settling = yield* Effect.forkDetach(reconciler.reconcile(task, upstreamId))
        const waited = yield* Fiber.join(settling).pipe(Effect.timeoutOption(SETTLE_WAIT_MS))
        if (Option.isNone(waited)) return answer(202, task, false)
        const outcome = waited.value
        switch (outcome._tag) {
          case "Succeeded":
          case "Failed":
            return answer(200, outcome.task, true)
          case "OtherJob":
            return yield* invalid(`The callback names upstream job ${upstreamId}; the task runs as ${outcome.upstreamRef}.`)
          case "Unreachable":
            // The upstream retries a callback that failed; polling settles the task meanwhile.
            return yield* new Errors.ApiUnavailable({ message: "The job could not be checked upstream; call back later." })
          default: {
            // Pending, or settled meanwhile by the worker (this resolution then lost the race).
            const now = (yield* store.get(task.accountId, task.id)) ?? task
            return answer(now.status === "succeeded" || now.status === "failed" ? 200 : 202, now, false)
          }
        }
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
    )
  })
)
