/**
 * The hostile-input corpus (issue 13) as a suite: hundreds of bad requests over every endpoint
 * of the composed server (REST API, chat, OAuth, MCP, admin RPC), each a row of data with the
 * status and the documented code it must get (see Corpus.ts for what every answer must also
 * be). None may answer 5xx, drop the connection, or pollute Object.prototype of the server's
 * process (which is the test's).
 *
 * Some rows are generated: a NUL and each lone surrogate half in every string position of every
 * model's input, the fields read from GET /api/v1/models of the running server.
 *
 * HOSTILE_LOG=<file> appends one JSON line per case (name, status, verdict) for triage.
 */
import { randomUUID } from "node:crypto"
import { appendFileSync } from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import { adminCases } from "./cases/admin.ts"
import { type CorpusContext, type Model, REDIRECT_URI } from "./cases/context.ts"
import { jobsCases } from "./cases/jobs.ts"
import { mcpCases } from "./cases/mcp.ts"
import { oauthCases } from "./cases/oauth.ts"
import { restCases } from "./cases/rest.ts"
import type { HostileCase } from "./Corpus.ts"
import { verdict } from "./Corpus.ts"
import * as HostileServer from "./HostileServer.ts"
import { send } from "./RawHttp.ts"

export interface Prepared {
  readonly server: HostileServer.HostileServer
  readonly groups: ReadonlyArray<readonly [string, ReadonlyArray<HostileCase>]>
}

/** Starts the server on `storage` and builds the cases from what it lists. */
export const prepare = async (storage: HostileServer.Storage): Promise<Prepared> => {
  const server = await HostileServer.start(storage)

  const call = async (
    method: string,
    path: string,
    init: { readonly body?: unknown; readonly headers?: Record<string, string> } = {}
  ) => {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    return { status: response.status, body: (await response.json()) as any }
  }

  const readContext = async (): Promise<CorpusContext> => {
    const models = await call("GET", "/api/v1/models")
    const list: ReadonlyArray<Model> = models.body.models ?? models.body.data ?? models.body
    const chatModels = await call("GET", "/api/v1/chat/models")
    const chatModel: string = (chatModels.body.data as ReadonlyArray<{ id: string }>)[0]!.id
    const registered = await call("POST", "/register", {
      body: { client_name: "Corpus client", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" }
    })
    const job = await call("POST", "/api/v1/jobs", {
      body: { model: "alpha-2-lite-text-to-image-economy", input: { prompt: "a lighthouse at dusk" } },
      headers: { authorization: `Bearer ${server.other.secret}`, "idempotency-key": randomUUID() }
    })
    if (list.length === 0 || registered.status !== 201 || job.status !== 202) {
      throw new Error(
        `corpus setup: ${list.length} models, register ${registered.status}, job ${job.status} ${JSON.stringify(job.body)}`
      )
    }
    return { models: list, chatModel, clientId: registered.body.client_id, otherJobId: job.body.id }
  }

  const context = await readContext()

  const groups: ReadonlyArray<readonly [string, ReadonlyArray<HostileCase>]> = [
    ["jobs", jobsCases(context)],
    ["rest", restCases(context)],
    ["oauth", oauthCases(context)],
    ["mcp", mcpCases()],
    ["admin", adminCases()]
  ]
  return { server, groups }
}

const authorization = (server: HostileServer.HostileServer, c: HostileCase): ReadonlyArray<readonly [string, string]> => {
  switch (c.auth ?? "none") {
    case "customer":
      return [["authorization", `Bearer ${server.customer.secret}`]]
    case "other":
      return [["authorization", `Bearer ${server.other.secret}`]]
    case "operator":
      return [["authorization", `Bearer ${server.operatorToken}`]]
    case "none":
      return []
  }
}

/** Sends a case to its listener: the admin base URL for admin cases, the public one otherwise. */
export const run = (server: HostileServer.HostileServer, c: HostileCase) => {
  const base = c.target === "admin" ? server.adminBaseUrl : server.baseUrl
  const path = c.target === "admin" ? c.request.path.replace("/admin/rpc", server.adminPath) : c.request.path
  return send(base, { ...c.request, path, headers: [...authorization(server, c), ...(c.request.headers ?? [])] }, c.timeoutMs)
}

/** The corpus's tests over a prepared server: one test per case, named by the case. */
export const define = (title: string, { server, groups }: Prepared) => {
  afterAll(() => server.close())
  describe(title, () => {
    it("has at least 200 cases, with unique names", () => {
      const all = groups.flatMap(([, cases]) => cases)
      expect(all.length).toBeGreaterThanOrEqual(200)
      const names = all.map((c) => c.name)
      expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([])
    })

    for (const [group, cases] of groups) {
      describe(group, () => {
        it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
          const started = Date.now()
          const reply = await run(server, c)
          const problem = verdict(c, reply)
          if (process.env.HOSTILE_LOG)
            appendFileSync(
              process.env.HOSTILE_LOG,
              `${JSON.stringify({ title, group, name: c.name, ms: Date.now() - started, status: reply.status, ok: problem === undefined, problem, unsure: c.unsure })}\n`
            )
          expect(problem, problem).toBeUndefined()
        })
      })
    }

    it("left Object.prototype of the server's process unpolluted", () => {
      const probe: Record<string, unknown> = {}
      expect(["polluted", "x", "y", "model", "prompt", "entry", "redirect_uris", "role"].filter((key) => key in probe)).toEqual(
        []
      )
    })
  })
}
