/**
 * A Replicate upstream for msw: a prediction starts, is processing for `pendingPolls` polls,
 * then succeeds with one image URL. With `Prefer: wait`, it answers already succeeded.
 */
import { http, HttpResponse } from "msw"
import { CDN, record } from "./Recorded.ts"
import type { Recorded } from "./Recorded.ts"

export const fakeReplicate = (base: string, options: { readonly apiKey?: string; readonly pendingPolls?: number } = {}) => {
  const requests: Array<Recorded> = []
  const jobs = new Map<string, { readonly model: string; polls: number }>()
  const prediction = (id: string, status: string, output: unknown = null) => ({
    id,
    status,
    output,
    error: null,
    urls: { get: `${base}/v1/predictions/${id}`, cancel: `${base}/v1/predictions/${id}/cancel` }
  })
  const handlers = [
    http.post(`${base}/v1/models/:owner/:name/predictions`, async ({ request, params }) => {
      const seen = await record(request)
      requests.push(seen)
      if (request.headers.get("authorization") !== `Bearer ${options.apiKey ?? "test-key"}`) {
        return HttpResponse.json(
          { title: "Unauthenticated", detail: "You did not pass a valid authentication token", status: 401 },
          { status: 401 }
        )
      }
      const id = `pred${jobs.size + 1}`
      jobs.set(id, { model: `${params["owner"]}/${params["name"]}`, polls: 0 })
      return request.headers.get("prefer")?.startsWith("wait")
        ? HttpResponse.json(prediction(id, "succeeded", [`${CDN}/${id}.png`]), { status: 201 })
        : HttpResponse.json(prediction(id, "starting"), { status: 201 })
    }),
    http.get(`${base}/v1/predictions/:id`, async ({ request, params }) => {
      requests.push(await record(request))
      const id = String(params["id"])
      const job = jobs.get(id)
      if (job === undefined) return HttpResponse.json({ detail: "Not found." }, { status: 404 })
      return job.polls++ < (options.pendingPolls ?? 1)
        ? HttpResponse.json(prediction(id, "processing"))
        : HttpResponse.json(prediction(id, "succeeded", [`${CDN}/${id}.png`]))
    }),
    http.post(`${base}/v1/predictions/:id/cancel`, async ({ request, params }) => {
      requests.push(await record(request))
      return HttpResponse.json(prediction(String(params["id"]), "canceled"))
    })
  ]
  return { handlers, requests, jobs }
}
