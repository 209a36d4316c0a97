/**
 * A task market upstream for msw: createTask stores the job, recordInfo reports it
 * "generating" for `pendingPolls` polls, then "success" with result URLs (one per job, or
 * `batch` images for models whose id says text-to-image batches).
 */
import { http, HttpResponse } from "msw"
import { CDN, record } from "./Recorded.ts"
import type { Recorded } from "./Recorded.ts"

export interface Options {
  readonly apiKey?: string
  readonly pendingPolls?: number
  /** How many result URLs a job returns. */
  readonly results?: (model: string) => number
}

const extensionOf = (model: string) => (/video/.test(model) ? "mp4" : "png")

export const fakeMarket = (base: string, options: Options = {}) => {
  const requests: Array<Recorded> = []
  const jobs = new Map<string, { readonly model: string; polls: number }>()
  const authorized = (request: Request) => request.headers.get("authorization") === `Bearer ${options.apiKey ?? "test-key"}`
  const handlers = [
    http.post(`${base}/api/v1/jobs/createTask`, async ({ request }) => {
      const seen = await record(request)
      requests.push(seen)
      if (!authorized(request)) return HttpResponse.json({ code: 401, msg: "invalid api key" })
      const taskId = `task_${jobs.size + 1}`
      jobs.set(taskId, { model: (seen.body as { model: string }).model, polls: 0 })
      return HttpResponse.json({ code: 200, msg: "success", data: { taskId } })
    }),
    http.get(`${base}/api/v1/jobs/recordInfo`, async ({ request }) => {
      requests.push(await record(request))
      const taskId = new URL(request.url).searchParams.get("taskId") ?? ""
      const job = jobs.get(taskId)
      if (job === undefined) return HttpResponse.json({ code: 404, msg: "task not found" })
      if (job.polls++ < (options.pendingPolls ?? 1)) {
        return HttpResponse.json({ code: 200, msg: "success", data: { taskId, model: job.model, state: "generating" } })
      }
      const count = options.results?.(job.model) ?? 1
      const resultUrls = Array.from({ length: count }, (_, i) => `${CDN}/${taskId}-${i}.${extensionOf(job.model)}`)
      return HttpResponse.json({
        code: 200,
        msg: "success",
        data: {
          taskId,
          model: job.model,
          state: "success",
          resultJson: JSON.stringify({ resultUrls }),
          failCode: "",
          failMsg: ""
        }
      })
    })
  ]
  return { handlers, requests, jobs }
}
