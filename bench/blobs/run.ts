/**
 * The blob store benchmark, in one run: put and get throughput and latency (p50, p99) of 64 KiB
 * and 16 MiB objects against a local S3 server (s3rver, in this process) and the file system;
 * then the memory of one 200 MB streamed upload through a `taskmeter start` process with
 * S3_BUCKET, sampled from /proc against its idle RSS. Usage: bench/blobs/README.md.
 */
import { mkdtempSync } from "node:fs"
import { readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import { BlobStore } from "@taskmeter/kernel"
import { S3BlobStore, S3Client } from "@taskmeter/storage-s3"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import { summarize } from "../support/percentile.ts"
import { BIN, startTaskmeter, taskmeterAdmin } from "../support/taskmeter.ts"

const { values: args } = parseArgs({
  options: {
    "small-ops": { type: "string", default: "200" },
    "large-ops": { type: "string", default: "10" },
    "upload-mb": { type: "string", default: "200" }
  }
})

const KiB = 1024
const MiB = 1024 * KiB
const sizes = [
  { label: "64 KiB", bytes: 64 * KiB, ops: Number(args["small-ops"]) },
  { label: "16 MiB", bytes: 16 * MiB, ops: Number(args["large-ops"]) }
]

/** `size` bytes in chunks of at most 64 KiB, as a request body arrives. */
async function* body(size: number, fill: number): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < size; sent += 64 * KiB) yield new Uint8Array(Math.min(64 * KiB, size - sent)).fill(fill)
}

const drain = async (bytes: AsyncIterable<Uint8Array> | undefined): Promise<number> => {
  let total = 0
  for await (const chunk of bytes ?? []) total += chunk.byteLength
  return total
}

interface Row {
  readonly store: string
  readonly size: string
  readonly op: string
  readonly ops: number
  readonly mbPerSecond: number
  readonly p50: number
  readonly p99: number
}

const measure = async (store: string, blobs: BlobStore.BlobStore["Service"]): Promise<Array<Row>> => {
  const rows: Array<Row> = []
  for (const { bytes, label, ops } of sizes) {
    const timings = { put: [] as Array<number>, get: [] as Array<number> }
    let elapsed = { put: 0, get: 0 }
    for (let i = 0; i < ops; i++) {
      const key = `bench/${label.replace(" ", "")}/${i}`
      let started = performance.now()
      await Effect.runPromise(blobs.put(key, body(bytes, i), { maxBytes: bytes }))
      const put = performance.now() - started
      started = performance.now()
      const read = await drain(await Effect.runPromise(blobs.read(key)))
      const get = performance.now() - started
      if (read !== bytes) throw new Error(`${store}: read ${read} bytes of ${bytes}`)
      timings.put.push(put)
      timings.get.push(get)
      elapsed = { put: elapsed.put + put, get: elapsed.get + get }
    }
    for (const op of ["put", "get"] as const) {
      const summary = summarize(timings[op])
      rows.push({
        store,
        size: label,
        op,
        ops,
        mbPerSecond: (bytes * ops) / 1e6 / (elapsed[op] / 1000),
        p50: summary.p50,
        p99: summary.p99
      })
    }
  }
  return rows
}

const rssOf = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * KiB
}

/** An MP4 of `size` bytes as far as the upload's type check goes: the ftyp box, then zeros. */
async function* video(size: number): AsyncIterable<Uint8Array> {
  const head = Uint8Array.from([0, 0, 0, 0x18, ...new TextEncoder().encode("ftypmp42"), 0, 0, 0, 0, ...new Array(8).fill(0)])
  yield head
  for (let sent = head.byteLength; sent < size; sent += MiB) yield new Uint8Array(Math.min(MiB, size - sent))
}

const upload = async (url: string, key: string, size: number): Promise<number> => {
  const response = await fetch(`${url}/api/v1/media`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "video/mp4" },
    body: ReadableStreamFrom(video(size)),
    duplex: "half"
  } as RequestInit)
  await response.arrayBuffer()
  return response.status
}

const ReadableStreamFrom = (source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> => {
  const iterator = source[Symbol.asyncIterator]()
  return new ReadableStream({
    async pull(controller) {
      const next = await iterator.next()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    }
  })
}

const memoryOfUpload = async (s3: LocalS3.LocalS3, megabytes: number) => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-bench-blobs-"))
  const server = await startTaskmeter(BIN, {
    PATH: process.env["PATH"] ?? "",
    ...s3.env,
    DATA_DIR: dataDir,
    PORT: "0",
    ADMIN_PORT: "0",
    HOST: "127.0.0.1",
    WORKERS: "false",
    MAX_UPLOAD_BYTES: String(megabytes * 1e6 + MiB)
  })
  try {
    const created: string = (
      await taskmeterAdmin(BIN, ["--data-dir", dataDir, "account", "create", "--credits-usd", "1"], {
        PATH: process.env["PATH"] ?? ""
      })
    ).key.secret
    // Load the upload path's modules and open the S3 client's sockets with a small file (one
    // PutObject, no part buffers), then let the heap settle.
    if ((await upload(server.url, created, 64 * KiB)) !== 201) throw new Error("warm-up upload failed")
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const pid = server.child.pid!
    const idle = await rssOf(pid)
    let peak = idle
    const sampler = setInterval(() => void rssOf(pid).then((rss) => (peak = Math.max(peak, rss))), 20)
    const started = performance.now()
    const status = await upload(server.url, created, megabytes * 1e6)
    const seconds = (performance.now() - started) / 1000
    clearInterval(sampler)
    if (status !== 201) throw new Error(`the ${megabytes} MB upload answered ${status}`)
    return { idle, peak, seconds }
  } finally {
    server.child.kill("SIGTERM")
    await new Promise((resolve) => server.child.once("exit", resolve))
    await rm(dataDir, { recursive: true, force: true })
  }
}

const s3 = await LocalS3.start({ prefix: "bench" })
const files = mkdtempSync(join(tmpdir(), "taskmeter-bench-files-"))
try {
  const rows = [
    ...(await measure(
      "S3 (s3rver)",
      S3BlobStore.make({
        client: S3Client.make(s3.settings, { credentials: LocalS3.credentials }),
        bucket: s3.bucket,
        prefix: "bench/"
      })
    )),
    ...(await measure("file system", BlobStore.makeFileSystem(files)))
  ]
  const fixed = (n: number, digits = 1) => n.toFixed(digits)
  console.log("| store | size | op | ops | MB/s | p50 ms | p99 ms |")
  console.log("| --- | --- | --- | ---: | ---: | ---: | ---: |")
  for (const row of rows) {
    console.log(
      `| ${row.store} | ${row.size} | ${row.op} | ${row.ops} | ${fixed(row.mbPerSecond)} | ${fixed(row.p50)} | ${fixed(row.p99)} |`
    )
  }
  const megabytes = Number(args["upload-mb"])
  const memory = await memoryOfUpload(s3, megabytes)
  console.log(
    `\n${megabytes} MB streamed upload through taskmeter start (S3_BUCKET): idle RSS ${fixed(memory.idle / MiB)} MiB, ` +
      `peak ${fixed(memory.peak / MiB)} MiB, +${fixed((memory.peak - memory.idle) / MiB)} MiB above idle, ` +
      `${fixed(megabytes / memory.seconds)} MB/s`
  )
} finally {
  await rm(files, { recursive: true, force: true })
  await s3.close()
}
