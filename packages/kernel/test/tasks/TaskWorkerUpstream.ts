/**
 * A fake asynchronous upstream on 127.0.0.1 (node:http) for the multi-process worker tests,
 * and the small ProviderV1 adapter the worker processes use to reach it.
 *
 * Protocol: POST /jobs {model, input, reference} -> {id, status[, outputs]}; GET /jobs/<id> ->
 * {id, status, outputs | errorCode}; GET /jobs?reference=<r> -> {id} or 404; POST
 * /jobs/<id>/cancel -> 200 (a pending job fails); GET /files/<name> -> PNG bytes. The server counts every POST per reference, duplicates included, so a test can
 * prove that no task was ever sent twice.
 */
import { createServer } from "node:http"
import type { IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { ProviderError } from "../../src/tasks/Provider.ts"
import type { PollResult, ProviderOutput, ProviderV1 } from "../../src/tasks/Provider.ts"

export type JobState = "pending" | "succeeded" | "failed"

interface Job {
  readonly id: string
  readonly reference: string
  state: JobState
}

export const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])

export interface Upstream {
  readonly url: string
  /** POSTs received per reference. */
  readonly submissions: Map<string, number>
  /** Cancels received per reference. */
  readonly cancels: Map<string, number>
  /** Submissions whose response is held back (the connection stays open, unanswered). */
  holdSubmitResponses: boolean
  readonly finish: (reference: string, state: JobState) => void
  readonly close: () => Promise<void>
}

const readBody = async (request: IncomingMessage): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString("utf8"))
}

/** Starts the upstream; `initial` decides the state a new job starts in. */
export const serve = async (initial: (reference: string) => JobState): Promise<Upstream> => {
  const jobs = new Map<string, Job>()
  const byReference = new Map<string, Job>()
  const held = new Set<() => void>()
  let next = 0
  const view = (job: Job, base: string) =>
    job.state === "succeeded"
      ? {
          id: job.id,
          status: job.state,
          outputs: [{ type: "image", url: `${base}/files/${job.id}.png`, contentType: "image/png" }]
        }
      : job.state === "failed"
        ? { id: job.id, status: job.state, errorCode: "UPSTREAM_FAILED_BY_TEST" }
        : { id: job.id, status: job.state }

  const server = createServer(async (request, response) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const url = new URL(request.url ?? "/", base)
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" })
      response.end(JSON.stringify(body))
    }
    if (request.method === "POST" && url.pathname === "/jobs") {
      const body = (await readBody(request)) as { readonly reference: string }
      upstream.submissions.set(body.reference, (upstream.submissions.get(body.reference) ?? 0) + 1)
      let job = byReference.get(body.reference)
      if (job === undefined) {
        job = { id: `job-${++next}`, reference: body.reference, state: initial(body.reference) }
        jobs.set(job.id, job)
        byReference.set(job.reference, job)
      }
      if (upstream.holdSubmitResponses) {
        held.add(() => response.destroy())
        return
      }
      return json(201, view(job, base))
    }
    if (request.method === "GET" && url.pathname === "/jobs") {
      const job = byReference.get(url.searchParams.get("reference") ?? "")
      return job === undefined ? json(404, { error: "no such job" }) : json(200, { id: job.id })
    }
    const cancelMatch = /^\/jobs\/([\w-]+)\/cancel$/.exec(url.pathname)
    if (request.method === "POST" && cancelMatch !== null) {
      const job = jobs.get(cancelMatch[1]!)
      if (job === undefined) return json(404, { error: "no such job" })
      upstream.cancels.set(job.reference, (upstream.cancels.get(job.reference) ?? 0) + 1)
      if (job.state === "pending") job.state = "failed"
      return json(200, view(job, base))
    }
    const jobMatch = /^\/jobs\/([\w-]+)$/.exec(url.pathname)
    if (request.method === "GET" && jobMatch !== null) {
      const job = jobs.get(jobMatch[1]!)
      return job === undefined ? json(404, { error: "no such job" }) : json(200, view(job, base))
    }
    if (request.method === "GET" && url.pathname.startsWith("/files/")) {
      response.writeHead(200, { "content-type": "image/png", "content-length": String(PNG.byteLength) })
      return response.end(PNG)
    }
    json(404, { error: "not found" })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const upstream: Upstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    submissions: new Map(),
    cancels: new Map(),
    holdSubmitResponses: false,
    finish: (reference, state) => {
      const job = byReference.get(reference)
      if (job === undefined) throw new Error(`no job for ${reference}`)
      job.state = state
    },
    close: async () => {
      for (const drop of held) drop()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  return upstream
}

interface JobView {
  readonly id: string
  readonly status: JobState
  readonly outputs?: ReadonlyArray<ProviderOutput>
  readonly errorCode?: string
}

/** The adapter for this upstream, as a worker process builds it. */
export const adapter = (baseUrl: string, models: ReadonlyArray<string>): ProviderV1 => {
  const call = (method: "GET" | "POST", path: string, body: unknown, sending: boolean) =>
    Effect.tryPromise({
      try: (signal) =>
        fetch(`${baseUrl}${path}`, {
          method,
          signal,
          headers: { "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }).then(async (response) => ({ status: response.status, body: (await response.json()) as unknown })),
      // A submission whose connection fails may have arrived: only reads are safe to repeat.
      catch: (cause) => new ProviderError({ reason: sending ? "OutcomeUnknown" : "Retryable", message: String(cause), cause })
    }).pipe(
      Effect.flatMap((response) =>
        response.status === 429
          ? Effect.fail(new ProviderError({ reason: "RateLimited", message: "429", status: 429 }))
          : response.status >= 500
            ? Effect.fail(new ProviderError({ reason: "Retryable", message: `${response.status}`, status: response.status }))
            : Effect.succeed(response)
      )
    )
  const terminal = (status: number) =>
    Effect.fail(new ProviderError({ reason: "Terminal", message: `HTTP ${status}`, status, errorCode: "UPSTREAM_REJECTED" }))

  return {
    specificationVersion: "v1",
    provider: "local-upstream",
    models,
    submit: ({ model, input, reference }) =>
      Effect.flatMap(call("POST", "/jobs", { model, input, reference }, true), (response) => {
        if (response.status !== 201) return terminal(response.status)
        const job = response.body as JobView
        return Effect.succeed(
          job.status === "succeeded"
            ? ({ _tag: "Completed", upstreamId: job.id, outputs: job.outputs ?? [] } as const)
            : ({ _tag: "Accepted", upstreamId: job.id } as const)
        )
      }),
    poll: ({ upstreamId }) =>
      Effect.flatMap(
        call("GET", `/jobs/${upstreamId}`, undefined, false),
        (response): Effect.Effect<PollResult, ProviderError> => {
          if (response.status !== 200) return terminal(response.status)
          const job = response.body as JobView
          return Effect.succeed(
            job.status === "succeeded"
              ? { _tag: "Succeeded", outputs: job.outputs ?? [] }
              : job.status === "failed"
                ? { _tag: "Failed", errorCode: job.errorCode ?? "UPSTREAM_FAILED", message: "failed upstream" }
                : { _tag: "Pending" }
          )
        }
      ),
    cancel: ({ upstreamId }) =>
      Effect.flatMap(call("POST", `/jobs/${upstreamId}/cancel`, {}, false), (response) =>
        response.status === 200 ? Effect.void : terminal(response.status)
      ),
    lookup: ({ reference }) =>
      Effect.flatMap(call("GET", `/jobs?reference=${encodeURIComponent(reference)}`, undefined, false), (response) =>
        response.status === 404
          ? Effect.succeed(undefined)
          : response.status === 200
            ? Effect.succeed({ upstreamId: (response.body as JobView).id })
            : terminal(response.status)
      )
  }
}
