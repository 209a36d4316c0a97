/**
 * A fal queue upstream for msw: a submit to any endpoint queues the request, its status is
 * IN_QUEUE (202) then IN_PROGRESS for `pendingPolls` polls, then COMPLETED (200), and the
 * result is `{ video: { url, content_type } }`.
 */
import { http, HttpResponse } from "msw"
import { CDN, record } from "./Recorded.ts"
import type { Recorded } from "./Recorded.ts"

export const fakeFal = (base: string, options: { readonly apiKey?: string; readonly pendingPolls?: number } = {}) => {
  const requests: Array<Recorded> = []
  const jobs = new Map<string, { readonly endpoint: string; polls: number }>()
  const authorized = (request: Request) => request.headers.get("authorization") === `Key ${options.apiKey ?? "test-key"}`
  const handlers = [
    http.get(`${base}/:owner/:app/requests/:id/status`, async ({ request, params }) => {
      requests.push(await record(request))
      const job = jobs.get(String(params["id"]))
      if (job === undefined) return HttpResponse.json({ detail: "Request not found" }, { status: 404 })
      const polls = job.polls++
      if (polls < (options.pendingPolls ?? 1)) {
        return HttpResponse.json({ status: polls === 0 ? "IN_QUEUE" : "IN_PROGRESS", queue_position: 0 }, { status: 202 })
      }
      return HttpResponse.json({ status: "COMPLETED" })
    }),
    http.get(`${base}/:owner/:app/requests/:id`, async ({ request, params }) => {
      requests.push(await record(request))
      const id = String(params["id"])
      if (!jobs.has(id)) return HttpResponse.json({ detail: "Request not found" }, { status: 404 })
      return HttpResponse.json({ video: { url: `${CDN}/${id}.mp4`, content_type: "video/mp4", file_size: 1234 } })
    }),
    http.put(`${base}/:owner/:app/requests/:id/cancel`, async ({ request }) => {
      requests.push(await record(request))
      return HttpResponse.json({ status: "CANCELLATION_REQUESTED" }, { status: 202 })
    }),
    http.post(`${base}/*`, async ({ request }) => {
      const seen = await record(request)
      requests.push(seen)
      if (!authorized(request)) return HttpResponse.json({ detail: "Unauthorized" }, { status: 401 })
      const id = `req-${jobs.size + 1}`
      jobs.set(id, { endpoint: seen.url.pathname.slice(1), polls: 0 })
      return HttpResponse.json({ request_id: id, status: "IN_QUEUE", status_url: `${base}/x/requests/${id}/status` })
    })
  ]
  return { handlers, requests, jobs }
}
