/**
 * The garbage collector's settings of a server process (`taskmeter start`, `npm start`, `taskmeter
 * worker`), applied before anything is served: V8's allocation-site pretenuring off. Left as V8
 * has it when the process's node flags (its command line or NODE_OPTIONS) name the setting, and in
 * a worker thread (flags are the whole process's). Why: docs/decisions.md, Development.
 */
import { setFlagsFromString } from "node:v8"
import { isMainThread } from "node:worker_threads"
import { Effect } from "effect"

const SETTING = "allocation-site-pretenuring"

/** True when the operator's node flags already say how pretenuring goes. */
const namedByOperator = (): boolean =>
  [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some((flag) => flag.includes(SETTING))

export const apply: Effect.Effect<void> = Effect.sync(() => {
  if (isMainThread && !namedByOperator()) setFlagsFromString(`--no-${SETTING}`)
})
