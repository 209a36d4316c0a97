#!/usr/bin/env node
/** `npm start`: the composed server (see src/main.ts), until SIGINT or SIGTERM closes it gracefully. */
import { NodeRuntime } from "@effect/platform-node"
import * as Main from "../src/main.ts"
import * as Shutdown from "../src/Shutdown.ts"

NodeRuntime.runMain(Main.start, { teardown: Shutdown.teardown })
