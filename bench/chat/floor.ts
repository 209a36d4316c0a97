/**
 * The floor of an Effect HTTP server on this machine: one POST route that reads a small JSON body
 * and answers a fixed JSON object, served by bare node:http, by effect's HttpRouter on
 * NodeHttpServer, and by the same with taskmeter's per-request observation (request id, metrics,
 * access line to stdout, LOG_FORMAT=json) as `taskmeter start` has it. Each server runs in a
 * process of its own (this script with FLOOR_SERVER set); the client sends the same requests to
 * each, in rounds that alternate servers, and prints per concurrency the median over rounds of p50
 * and of the server's CPU ms per request (user and system, from /proc).
 * Usage: node bench/chat/floor.ts [--requests 4000] [--concurrency 1,32] [--rounds 3]
 */
import { execFileSync, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { Logging, Server, ServerConfig } from "@taskmeter/http"
import { summarize } from "../support/percentile.ts"

const ANSWER = {
  id: "chatcmpl-floor",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" } }]
}
const SERVERS = ["node:http", "effect", "effect+observed"] as const
type Kind = (typeof SERVERS)[number]

/** Serves `kind` on a free port and prints its URL. */
const serve = (kind: Kind) => {
  if (kind === "node:http") {
    const server = createServer((incoming, outgoing) => {
      const chunks: Array<Buffer> = []
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
      incoming.on("end", () => {
        JSON.parse(Buffer.concat(chunks).toString())
        const body = JSON.stringify(ANSWER)
        outgoing.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
        outgoing.end(body)
      })
    })
    server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
    return
  }
  const route = HttpRouter.use((router) =>
    router.add(
      "POST",
      "/floor",
      Effect.flatMap(
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.json),
        () => Effect.succeed(HttpServerResponse.jsonUnsafe(ANSWER))
      )
    )
  )
  const announce = Layer.effectDiscard(
    Effect.flatMap(HttpServer.HttpServer, ({ address }) =>
      Effect.sync(() => console.log(`http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`))
    )
  )
  const served =
    kind === "effect"
      ? HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
        )
      : Server.serve(route, { disableLogger: true, disableListenLog: true, observed: { accessLog: true } }).pipe(
          Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1" })),
          Layer.provide(Logging.layer({ format: "json" }))
        )
  Effect.runFork(Layer.launch(announce.pipe(Layer.provideMerge(served))))
}

const cpuMs = (pid: number, ticksPerSecond: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
}

const client = async () => {
  const { values } = parseArgs({
    options: {
      requests: { type: "string", default: "4000" },
      concurrency: { type: "string", default: "1,32" },
      rounds: { type: "string", default: "3" }
    }
  })
  const requests = Number(values.requests)
  const ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim())
  const children: Array<ChildProcess> = []
  const started = new Map<Kind, { url: string; pid: number }>()
  for (const kind of SERVERS) {
    const child = spawn(process.execPath, [import.meta.filename], {
      env: { ...process.env, FLOOR_SERVER: kind, LOG_FORMAT: "json" },
      stdio: ["ignore", "pipe", "inherit"]
    })
    children.push(child)
    const lines = createInterface({ input: child.stdout! })
    const url = await new Promise<string>((resolve) => lines.once("line", resolve))
    child.stdout!.resume()
    started.set(kind, { url, pid: child.pid! })
  }
  const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "Summarize a short story." }] })
  const measure = async (url: string, concurrency: number, count: number) => {
    const samples: Array<number> = []
    let next = 0
    const worker = async () => {
      while (next < count) {
        next++
        const t = performance.now()
        const response = await fetch(`${url}/floor`, { method: "POST", headers: { "content-type": "application/json" }, body })
        await response.json()
        samples.push(performance.now() - t)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return summarize(samples).p50
  }
  try {
    for (const { url } of started.values()) await measure(url, 8, 1000)
    console.log(`| server | concurrency | p50 ms | server CPU ms per request |\n|---|---|---|---|`)
    for (const concurrency of values.concurrency.split(",").map(Number)) {
      const figures = new Map<Kind, { p50: Array<number>; cpu: Array<number> }>()
      for (let round = 0; round < Number(values.rounds); round++) {
        for (const [kind, { url, pid }] of started) {
          const before = cpuMs(pid, ticksPerSecond)
          const p50 = await measure(url, concurrency, requests)
          const cpu = (cpuMs(pid, ticksPerSecond) - before) / requests
          const entry = figures.get(kind) ?? { p50: [], cpu: [] }
          entry.p50.push(p50)
          entry.cpu.push(cpu)
          figures.set(kind, entry)
        }
      }
      const median = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
      for (const [kind, { p50, cpu }] of figures) {
        console.log(`| ${kind} | ${concurrency} | ${median(p50).toFixed(2)} | ${median(cpu).toFixed(3)} |`)
      }
    }
  } finally {
    for (const child of children) child.kill()
  }
}

if (process.env.FLOOR_SERVER !== undefined) serve(process.env.FLOOR_SERVER as Kind)
else await client()
