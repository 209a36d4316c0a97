/**
 * A benchmark's taskmeter processes: `taskmeter start` with the given environment (and Node flags), resolved once
 * its API and admin listeners are up (its output drained after that, so a chatty access log never
 * blocks it), and `taskmeter admin ... --json`, resolved with its JSON answer.
 */
import { execFile, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { join } from "node:path"

/** This checkout's taskmeter CLI. */
export const BIN = join(import.meta.dirname, "../../packages/http/bin/taskmeter.ts")
const READY = /taskmeter is listening on (\S+)[\s\S]*\n {2}admin +(\S+)\/admin\/rpc /

export interface Started {
  readonly child: ChildProcess
  readonly url: string
  readonly adminUrl: string
}

/**
 * `taskmeter start` of the CLI `bin` under `env` (the whole environment) and Node's `flags` (e.g.
 * `--cpu-prof`); `onChild` sees the process before it listens.
 */
export const startTaskmeter = (
  bin: string,
  env: Record<string, string | undefined>,
  onChild: (child: ChildProcess) => void = () => undefined,
  flags: ReadonlyArray<string> = []
): Promise<Started> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, bin, "start"], { env, stdio: ["ignore", "pipe", "pipe"] })
    onChild(child)
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = READY.exec(output)
      if (match === null) return
      child.stdout.off("data", onData).resume()
      child.stderr.off("data", onData).resume()
      resolve({ child, url: match[1]!, adminUrl: match[2]! })
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.once("exit", (code) => reject(new Error(`taskmeter start exited with ${code} before listening:\n${output}`)))
  })

/** `taskmeter admin --json <args>` of the CLI `bin` under `env`, its JSON answer. */
export const taskmeterAdmin = (bin: string, args: ReadonlyArray<string>, env: Record<string, string | undefined>): Promise<any> =>
  new Promise((resolve, reject) =>
    execFile(process.execPath, [bin, "admin", "--json", ...args], { env, timeout: 60_000 }, (error, stdout, stderr) =>
      error === null ? resolve(JSON.parse(stdout)) : reject(new Error(`${error.message}\n${stderr}`))
    )
  )
