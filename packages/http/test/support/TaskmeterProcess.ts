/**
 * Test support: `taskmeter start|worker` as a child process, ready once its output matches `ready`
 * (first group: its address; second: the admin listener's), stopped with SIGTERM when the scope
 * closes; and `taskmeter admin --json` against a server's admin listener.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import * as Dependencies from "../../../../test/Dependencies.ts"

export const BIN = fileURLToPath(new URL("../../bin/taskmeter.ts", import.meta.url))

/** What a server prints once both its listeners are up: its address, then the admin listener's. */
export const SERVER_READY = /taskmeter is listening on (\S+)[\s\S]*\n {2}admin +(\S+)\/admin\/rpc /

export interface Launched {
  readonly url: string
  readonly adminUrl: string
  /** Everything it printed so far. */
  readonly output: () => string
  readonly child: ChildProcess
}

export const launch = (command: "start" | "worker", ready: RegExp, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.callback<Launched, Error>((resume) => {
      const child = spawn(process.execPath, [BIN, command], { env, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        const match = ready.exec(output)
        if (match !== null) resume(Effect.succeed({ url: match[1] ?? "", adminUrl: match[2] ?? "", output: () => output, child }))
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`taskmeter ${command} exited ${code}:\n${output}`))))
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        // A child killed by a signal has no exit code, but its signal.
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** `taskmeter admin --url <adminUrl> --token <token> --json ...args`, which must succeed; its JSON. */
export const admin = (adminUrl: string, token: string, ...args: ReadonlyArray<string>) =>
  Effect.callback<any>((resume) => {
    execFile(
      process.execPath,
      [BIN, "admin", "--url", adminUrl, "--token", token, "--json", ...args],
      { env: Dependencies.childEnv, timeout: 60_000 },
      (error, stdout, stderr) =>
        resume(error === null ? Effect.succeed(JSON.parse(stdout)) : Effect.die(new Error(`${error.message}\n${stderr}`)))
    )
  })
