/**
 * The chat benchmark: the latency the server adds over its upstream. A mock upstream (upstream.ts),
 * the server over storage-memory or PostgreSQL (server.ts), a bare Node proxy as the floor
 * (proxy.ts) and this client; the same requests go direct, through the proxy and through
 * POST /api/v1/chat/completions, reporting p50 and p99 per concurrency (whole response; stream:
 * first token) and the proxy's and the server's CPU per request, then checking the books.
 * Usage and options: bench/chat/README.md; results: bench/RESULTS.md.
 */
import { execFileSync, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import { summarize } from "../support/percentile.ts"

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "1000" },
    warmup: { type: "string", default: "200" },
    concurrency: { type: "string", default: "1,32" },
    kinds: { type: "string", default: "non-stream,stream" },
    tokens: { type: "string", default: "20" },
    store: { type: "string", default: "memory" },
    accounts: { type: "string", default: "1" },
    server: { type: "string", default: join(import.meta.dirname, "server.ts") },
    proxy: { type: "string", default: "proxy.ts" },
    "cpu-prof": { type: "string" },
    gc: { type: "boolean", default: false },
    segments: { type: "boolean", default: false }
  }
})
const REQUESTS = Number(args.requests)
const WARMUP = Number(args.warmup)
const LEVELS = args.concurrency.split(",").map(Number)
const STREAMS = args.kinds.split(",").map((kind) => kind === "stream")
const CREDITS = 1_000_000_000

const children: Array<ChildProcess> = []
// Also when a start fails: no child outlives the run.
process.once("exit", () => {
  for (const child of children) child.kill()
})

/** Starts a script of this folder (with these Node flags) and resolves with the first line it prints. */
const start = (script: string, env: Record<string, string>, flags: ReadonlyArray<string> = []): Promise<string> => {
  const child = spawn(process.execPath, [...flags, resolve(import.meta.dirname, script)], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve)
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)))
  })
}

/** With --segments, where the proxy and the server log each request's time inside them (segments.ts). */
const segmentsDir = args.segments ? mkdtempSync(join(tmpdir(), "bench-chat-segments-")) : undefined
const segmentsEnv = (name: string): Record<string, string> =>
  segmentsDir === undefined
    ? {}
    : {
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${join(import.meta.dirname, "segments.ts")}`,
        SEGMENTS_LOG: join(segmentsDir, name)
      }

const upstreamUrl = await start("upstream.ts", { TOKENS: args.tokens })
const proxyUrl = await start(args.proxy, { UPSTREAM_URL: upstreamUrl, STORE: args.store, ...segmentsEnv("proxy") })
const proxyPid = children.at(-1)!.pid!
const profile = args["cpu-prof"] === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${resolve(args["cpu-prof"])}`]
/** With --gc, where the server (deployed.ts) logs its garbage collections. */
const gcDir = args.gc ? mkdtempSync(join(tmpdir(), "bench-chat-gc-")) : undefined
const gcLog = gcDir === undefined ? undefined : join(gcDir, "gc.log")
const server = JSON.parse(
  await start(
    args.server,
    {
      UPSTREAM_URL: upstreamUrl,
      STORE: args.store,
      ACCOUNTS: args.accounts,
      ...(gcLog === undefined ? {} : { GC_LOG: gcLog }),
      ...segmentsEnv("server")
    },
    profile
  )
) as {
  readonly url: string
  /** One key per account; `key` alone from a server script of an older checkout. */
  readonly keys?: ReadonlyArray<string>
  readonly key?: string
  /** The serving process, when the script started it as a child (deployed.ts). */
  readonly pid?: number
}
const keys = server.keys ?? [server.key!]
const serverPid = server.pid ?? children.at(-1)!.pid!
const ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim())

/** A process's CPU time (user and system) so far, in ms (Linux /proc). */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
}

/** How long a process's threads have been ready to run but waiting for a core, in ms (Linux schedstat). */
const waitedMs = (pid: number): number =>
  readdirSync(`/proc/${pid}/task`).reduce((sum, thread) => {
    try {
      return sum + Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, "utf8").split(" ")[1]) / 1e6
    } catch {
      return sum // The thread ended meanwhile.
    }
  }, 0)

/** The CPU time of every PostgreSQL process on this machine so far, in ms (the run's own with --store pg). */
const postgresCpuMs = (): number =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .reduce((sum, pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("postgres") ? sum + cpuMs(Number(pid)) : sum
      } catch {
        return sum // The process ended meanwhile.
      }
    }, 0)

/** The server's collections logged so far (none without --gc, or from a server script that does not log them). */
const gcLines = (): Array<string> =>
  gcLog !== undefined && existsSync(gcLog)
    ? readFileSync(gcLog, "utf8")
        .split("\n")
        .filter((line) => line !== "")
    : []

/** The lines a segments log (segments.ts) holds so far: none without --segments. */
const segmentLines = (name: string): Array<string> => {
  const file = segmentsDir === undefined ? undefined : join(segmentsDir, name)
  return file !== undefined && existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "")
    : []
}

/** A path's row of the segments table: requests logged, the median of each segment and of their sum. */
const segmentRow = (path: string, lines: ReadonlyArray<string>): string => {
  const values = lines.map((line) => line.split(" ").map(Number))
  const median = (pick: (segments: Array<number>) => number) => summarize(values.map(pick)).p50.toFixed(3)
  return (
    `| ${path} | ${lines.length} | ${median((v) => v[0]!)} | ${median((v) => v[1]!)} | ${median((v) => v[2]!)} | ` +
    `${median((v) => v[0]! + v[1]! + v[2]!)} |`
  )
}

const GC_EVENT = /(Scavenge|Mark-Compact)[^\d]*[\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \//

/**
 * A cell's collections: scavenges per 1000 requests and their pause per request, the median growth
 * of the heap left after one scavenge to the next (what each promoted to the old generation), and
 * mark-compacts with their pause per request.
 */
const gcRow = (lines: ReadonlyArray<string>, requests: number): string => {
  let scavenges = 0
  let scavengeMs = 0
  let compactions = 0
  let compactionMs = 0
  const promoted: Array<number> = []
  let heapAfter: number | undefined
  for (const line of lines) {
    const event = GC_EVENT.exec(line)
    if (event === null) continue
    const [, kind, after, pause] = event
    if (kind === "Scavenge") {
      scavenges++
      scavengeMs += Number(pause)
      if (heapAfter !== undefined) promoted.push(Number(after) - heapAfter)
      heapAfter = Number(after)
    } else {
      compactions++
      compactionMs += Number(pause)
      heapAfter = undefined
    }
  }
  const medianPromoted = promoted.length === 0 ? "-" : summarize(promoted).p50.toFixed(1)
  return (
    `${((scavenges * 1000) / requests).toFixed(1)} | ${((scavengeMs * 1000) / requests).toFixed(0)} | ${medianPromoted} | ` +
    `${compactions} | ${((compactionMs * 1000) / requests).toFixed(0)}`
  )
}

const messages = [{ role: "user", content: "Summarize the plot of a short story about a lighthouse keeper." }]

/** One request: milliseconds to the whole body (non-stream) or to the first content token, and the charge reported. */
const timed = async (base: string, model: string, stream: boolean, key: string): Promise<{ ms: number; charged: number }> => {
  const started = performance.now()
  const response = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages, stream, max_tokens: 256 })
  })
  if (!response.ok) throw new Error(`${base}: ${response.status} ${await response.text()}`)
  if (!stream) {
    const body = (await response.json()) as { svc?: { charged_micros: number } }
    return { ms: performance.now() - started, charged: body.svc?.charged_micros ?? 0 }
  }
  const decoder = new TextDecoder()
  let text = ""
  let first: number | undefined
  for await (const bytes of response.body!) {
    text += decoder.decode(bytes, { stream: true })
    if (first === undefined && /"content":"[^"]/.test(text)) first = performance.now() - started
  }
  const charged = /"charged_micros":(\d+)/.exec(text)?.[1]
  return { ms: first ?? Number.NaN, charged: charged === undefined ? 0 : Number(charged) }
}

let totalCharged = 0

const measure = async (base: string, model: string, stream: boolean, concurrency: number, requests = REQUESTS) => {
  const samples: Array<number> = []
  let next = 0
  const worker = async () => {
    while (next < requests) {
      // The accounts take turns, request by request.
      const key = keys[next++ % keys.length]!
      const { ms, charged } = await timed(base, model, stream, key)
      samples.push(ms)
      if (base === server.url) totalCharged += charged
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const { p50, p99 } = summarize(samples)
  return { p50, p99 }
}

try {
  // Warm up both paths: JIT, connection pools, the tokenizer's tables.
  for (const stream of STREAMS) {
    await measure(upstreamUrl, "bench", stream, 8, WARMUP)
    await measure(proxyUrl, "bench", stream, 8, WARMUP)
    await measure(server.url, "chat-mini", stream, 8, WARMUP)
  }
  const rows: Array<string> = []
  const gcRows: Array<string> = []
  const segmentRows: Array<string> = []
  const fmt = (ms: number) => ms.toFixed(2)
  for (const concurrency of LEVELS) {
    for (const stream of STREAMS) {
      const direct = await measure(upstreamUrl, "bench", stream, concurrency)
      const proxySegmentsBefore = segmentLines("proxy").length
      const serverSegmentsBefore = segmentLines("server").length
      const proxyCpuBefore = cpuMs(proxyPid)
      const proxied = await measure(proxyUrl, "bench", stream, concurrency)
      const proxyCpu = (cpuMs(proxyPid) - proxyCpuBefore) / REQUESTS
      const cpuBefore = cpuMs(serverPid)
      const waitedBefore = waitedMs(serverPid)
      const postgresBefore = postgresCpuMs()
      const gcBefore = gcLines().length
      const startedMs = performance.now()
      const through = await measure(server.url, "chat-mini", stream, concurrency)
      const serverCpu = cpuMs(serverPid) - cpuBefore
      const waited = waitedMs(serverPid) - waitedBefore
      const postgresCpu = postgresCpuMs() - postgresBefore
      gcRows.push(`| ${stream ? "stream" : "non-stream"} | ${concurrency} | ${gcRow(gcLines().slice(gcBefore), REQUESTS)} |`)
      // CPU time over wall time: near 1, the server was busy on one core all along.
      const busy = serverCpu / (performance.now() - startedMs)
      if (segmentsDir !== undefined && concurrency === 1 && !stream) {
        // The logs are written asynchronously: a moment for the last lines to land.
        await new Promise((resolve) => setTimeout(resolve, 200))
        segmentRows.push(segmentRow(args.proxy, segmentLines("proxy").slice(proxySegmentsBefore)))
        segmentRows.push(segmentRow("taskmeter", segmentLines("server").slice(serverSegmentsBefore)))
      }
      const added = (via: { p50: number; p99: number }) => `${fmt(via.p50 - direct.p50)} / ${fmt(via.p99 - direct.p99)}`
      rows.push(
        `| ${stream ? "stream, first token" : "non-stream"} | ${concurrency} | ${fmt(direct.p50)} / ${fmt(direct.p99)} | ` +
          `${added(proxied)} | ${fmt(proxyCpu)} | ${fmt(through.p50)} / ${fmt(through.p99)} | ${added(through)} | ` +
          `${fmt(serverCpu / REQUESTS)} | ${fmt(busy)} | ${fmt(waited / REQUESTS)} | ${fmt(postgresCpu / REQUESTS)} |`
      )
    }
  }
  // Credit a server holds in a lease for chat is returned when the lease has been idle a moment.
  const books = async () => {
    const accounts = await Promise.all(
      keys.map(
        async (key) =>
          (await (await fetch(`${server.url}/usage?limit=1`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
            balanceMicros: number
            reservedMicros: number
          }
      )
    )
    return {
      balanceMicros: accounts.reduce((sum, account) => sum + account.balanceMicros, 0),
      reservedMicros: accounts.reduce((sum, account) => sum + account.reservedMicros, 0)
    }
  }
  let usage = await books()
  for (let waited = 0; usage.reservedMicros !== 0 && waited < 15_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    usage = await books()
  }
  const credits = CREDITS * keys.length
  const balanced = usage.reservedMicros === 0 && usage.balanceMicros === credits - totalCharged
  console.log(
    `chat latency, ${REQUESTS} requests per cell, ${args.tokens} completion tokens, store ${args.store}, ` +
      `${keys.length === 1 ? "one account" : `${keys.length} accounts taking turns`}; ms, p50 / p99\n`
  )
  console.log(
    `| request | concurrency | direct to upstream | ${args.proxy} adds | proxy CPU per request | through taskmeter | taskmeter adds | ` +
      "server CPU per request | server busy (cores) | server waited for a core per request | PostgreSQL CPU per request |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|---|---|")
  for (const row of rows) console.log(row)
  if (gcLines().length > 0) {
    console.log(
      "\nserver garbage collection during taskmeter's requests (--gc)\n\n" +
        "| request | concurrency | scavenges per 1000 requests | scavenge µs per request | promoted per scavenge, median MB | " +
        "mark-compacts | mark-compact µs per request |\n|---|---|---|---|---|---|---|"
    )
    for (const row of gcRows) console.log(row)
  }
  if (segmentRows.length > 0) {
    console.log(
      "\nwhere a non-stream request's time goes inside the proxy and the server at concurrency 1 (--segments), median ms\n\n" +
        "| path | requests | arrival to upstream request sent | upstream's answer | answer to last byte sent | in the process |\n" +
        "|---|---|---|---|---|---|"
    )
    for (const row of segmentRows) console.log(row)
  }
  console.log(
    `\nbooks: reserved ${usage.reservedMicros}, balance ${usage.balanceMicros} = ${credits} - ${totalCharged} charged: ` +
      (balanced ? "ok" : "MISMATCH")
  )
  process.exitCode = balanced ? 0 : 1
} finally {
  for (const child of children) child.kill()
  if (gcDir !== undefined) rmSync(gcDir, { recursive: true, force: true })
  if (segmentsDir !== undefined) rmSync(segmentsDir, { recursive: true, force: true })
}
