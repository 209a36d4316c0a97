/**
 * What the chat upstream call costs per transport, bare: non-streamed completions from the mock
 * upstream (upstream.ts, a process of its own) through global `fetch` with an undici Agent, through
 * `undici.request` (the providers package's undici, the one its chat adapter uses) and through
 * node:http with a keep-alive Agent; each sends the adapter's headers and reads and parses the whole
 * reply. Reported per transport and concurrency: this process's CPU ms per request (user and system)
 * and p50 latency in ms, the medians over `--rounds` rounds, the transports alternating within each.
 * Options: `--requests 2000` per transport, concurrency and round; `--concurrency 1,32`;
 * `--rounds 5`; `--json` prints one JSON line instead of the table.
 */
import { spawn } from "node:child_process"
import { once } from "node:events"
import * as http from "node:http"
import { createRequire } from "node:module"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import type * as Undici from "undici"
import { percentile } from "../support/percentile.ts"

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "1,32" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false }
  }
})
const REQUESTS = Number(args.requests)
const LEVELS = args.concurrency.split(",").map(Number)
const ROUNDS = Number(args.rounds)

const undici = createRequire(join(import.meta.dirname, "../../packages/providers/package.json"))("undici") as typeof Undici

const upstream = spawn(process.execPath, [join(import.meta.dirname, "upstream.ts")], {
  stdio: ["ignore", "pipe", "inherit"]
})
const [base] = (await once(createInterface({ input: upstream.stdout }), "line")) as [string]
const url = new URL(`${base}/chat/completions`)

const payload = JSON.stringify({
  model: "bench-model",
  messages: [{ role: "user", content: "Summarize the plot of a short story about a lighthouse keeper." }],
  max_tokens: 64
})
const headers = { "content-type": "application/json", accept: "application/json", authorization: "Bearer sk-bench" }

const agent = new undici.Agent({ connections: 128 })
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 128 })

const transports: Record<string, () => Promise<unknown>> = {
  fetch: async () => {
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: payload,
      dispatcher: agent as unknown as NonNullable<RequestInit["dispatcher"]>
    })
    return JSON.parse(await response.text())
  },
  "undici.request": async () => {
    const response = await undici.request(url, { method: "POST", headers, body: payload, dispatcher: agent })
    return JSON.parse(await response.body.text())
  },
  "node:http": () =>
    new Promise((resolve, reject) => {
      const request = http.request(url, { method: "POST", headers, agent: httpAgent }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")))
          } catch (cause) {
            reject(cause)
          }
        })
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end(payload)
    })
}

/** `requests` calls, `concurrency` at a time: CPU ms per request and each call's latency. */
const run = async (call: () => Promise<unknown>, requests: number, concurrency: number) => {
  const latencies: Array<number> = []
  let next = 0
  const worker = async () => {
    while (next++ < requests) {
      const start = performance.now()
      await call()
      latencies.push(performance.now() - start)
    }
  }
  const cpu = process.cpuUsage()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const used = process.cpuUsage(cpu)
  return { cpuMs: (used.user + used.system) / 1000 / requests, latencies: latencies.sort((a, b) => a - b) }
}

const median = (xs: ReadonlyArray<number>) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50
  )

const names = Object.keys(transports)
for (const name of names) await run(transports[name]!, 500, 32)

const samples = new Map<string, { cpu: Array<number>; p50: Array<number> }>()
for (let round = 0; round < ROUNDS; round++) {
  for (const concurrency of LEVELS) {
    // Rotated each round, so that no transport always runs first (or after the same one).
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!
      const { cpuMs, latencies } = await run(transports[name]!, REQUESTS, concurrency)
      const key = `${name} c=${concurrency}`
      const sample = samples.get(key) ?? { cpu: [], p50: [] }
      sample.cpu.push(cpuMs)
      sample.p50.push(percentile(latencies, 50))
      samples.set(key, sample)
    }
  }
}

const results = LEVELS.flatMap((concurrency) =>
  names.map((transport) => {
    const sample = samples.get(`${transport} c=${concurrency}`)!
    return { transport, concurrency, cpuMsPerRequest: median(sample.cpu), p50Ms: median(sample.p50) }
  })
)
if (args.json) {
  console.log(JSON.stringify({ requests: REQUESTS, rounds: ROUNDS, results }))
} else {
  console.log(`${REQUESTS} requests per cell, median of ${ROUNDS} rounds`)
  console.log("transport         conc  CPU ms/req  p50 ms")
  for (const r of results) {
    console.log(
      `${r.transport.padEnd(16)} ${String(r.concurrency).padStart(5)} ${r.cpuMsPerRequest.toFixed(3).padStart(11)} ${r.p50Ms.toFixed(3).padStart(7)}`
    )
  }
}
await agent.close()
httpAgent.destroy()
upstream.kill()
