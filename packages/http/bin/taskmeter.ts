#!/usr/bin/env node
/**
 * The taskmeter command line: `taskmeter admin ...` (operator commands against a running
 * server), `taskmeter start` (the server, as `npm start`) and `taskmeter worker` (a task worker
 * and the reconciler only, to scale out against a shared DATABASE_URL).
 */
// By module, not from the package's index, which loads the HTTP server and undici too.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import * as AdminCli from "../src/admin/AdminCli.ts"
import * as CliInvocation from "../src/admin/CliInvocation.ts"
import * as Shutdown from "../src/Shutdown.ts"

// The server's modules load only for the commands that run it, so admin commands start fast.
const main = Effect.promise(() => import("../src/main.ts"))

const start = Command.make("start", {}, () =>
  Effect.flatMap(main, (Main) => Main.start).pipe(Effect.catchTag("S3NotReady", (error) => AdminCli.failWith(error.message)))
).pipe(Command.withDescription("Start the server (as `npm start`): API, admin service and workers."))

const worker = Command.make("worker", {}, () =>
  Effect.flatMap(main, (Main) => Main.worker).pipe(
    Effect.catchTags({
      WorkerNotConfigured: (error) => AdminCli.failWith(error.message),
      WorkerListenError: (error) => AdminCli.failWith(error.message),
      S3NotReady: (error) => AdminCli.failWith(error.message)
    })
  )
).pipe(Command.withDescription("Run a task worker and the reconciler against DATABASE_URL, without an HTTP server."))

const taskmeter = Command.make("taskmeter").pipe(
  Command.withDescription("Sell hosted AI model runs: the server, its workers and the operator's admin commands."),
  Command.withSubcommands([AdminCli.command, start, worker])
)

Command.runWith(taskmeter, { version: "0.1.0" })(CliInvocation.normalize(process.argv.slice(2))).pipe(
  Effect.provide(Layer.merge(NodeServices.layer, CliInvocation.layer)),
  NodeRuntime.runMain({ teardown: Shutdown.teardown })
)
