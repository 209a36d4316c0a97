/**
 * The music API for msw: a song job goes PENDING, TEXT_SUCCESS, then SUCCESS with two tracks;
 * a lyrics job goes PENDING, then SUCCESS with two lyric variants.
 */
import { http, HttpResponse } from "msw"
import { CDN, record } from "./Recorded.ts"
import type { Recorded } from "./Recorded.ts"

export const LYRICS = "[Verse]\nSnow on the pines\nA fox in the light\n\n[Chorus]\nRun, little fox, run"

export const fakeSong = (base: string, options: { readonly apiKey?: string } = {}) => {
  const requests: Array<Recorded> = []
  const jobs = new Map<string, { readonly kind: "music" | "lyrics"; readonly body: Record<string, unknown>; polls: number }>()
  const create =
    (kind: "music" | "lyrics") =>
    async ({ request }: { readonly request: Request }) => {
      const seen = await record(request)
      requests.push(seen)
      if (request.headers.get("authorization") !== `Bearer ${options.apiKey ?? "test-key"}`) {
        return HttpResponse.json({ code: 401, msg: "You do not have access permissions" })
      }
      const taskId = `${kind}-${jobs.size + 1}`
      jobs.set(taskId, { kind, body: seen.body as Record<string, unknown>, polls: 0 })
      return HttpResponse.json({ code: 200, msg: "success", data: { taskId } })
    }
  const music = (taskId: string, job: { readonly body: Record<string, unknown> }, status: string) => ({
    taskId,
    status,
    type: "GENERATE",
    response:
      status === "SUCCESS"
        ? {
            taskId,
            sunoData: [1, 2].map((n) => ({
              id: `${taskId}-track-${n}`,
              audioUrl: `${CDN}/${taskId}-${n}.mp3`,
              title: String(job.body["title"] ?? "Fox in the Snow"),
              tags: String(job.body["style"] ?? "folk, warm"),
              duration: 120 + n
            }))
          }
        : null,
    errorCode: null,
    errorMessage: null
  })
  const lyrics = (taskId: string, status: string) => ({
    taskId,
    status,
    type: "LYRICS",
    response:
      status === "SUCCESS"
        ? {
            taskId,
            data: [
              { text: LYRICS, title: "Little Fox", status: "complete" },
              { text: "[Verse]\nother", title: "Other", status: "complete" }
            ]
          }
        : null,
    errorMessage: null
  })
  const info =
    (kind: "music" | "lyrics") =>
    async ({ request }: { readonly request: Request }) => {
      requests.push(await record(request))
      const taskId = new URL(request.url).searchParams.get("taskId") ?? ""
      const job = jobs.get(taskId)
      if (job === undefined || job.kind !== kind) return HttpResponse.json({ code: 404, msg: "task not found" })
      const polls = job.polls++
      const data =
        kind === "music"
          ? music(taskId, job, ["PENDING", "TEXT_SUCCESS"][polls] ?? "SUCCESS")
          : lyrics(taskId, polls === 0 ? "PENDING" : "SUCCESS")
      return HttpResponse.json({ code: 200, msg: "success", data })
    }
  const handlers = [
    http.post(`${base}/api/v1/generate`, create("music")),
    http.get(`${base}/api/v1/generate/record-info`, info("music")),
    http.post(`${base}/api/v1/lyrics`, create("lyrics")),
    http.get(`${base}/api/v1/lyrics/record-info`, info("lyrics"))
  ]
  return { handlers, requests, jobs }
}
