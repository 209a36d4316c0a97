/**
 * How the server's processes end (`npm start`, `taskmeter start|worker`): SIGINT and SIGTERM
 * interrupt the main fiber, which closes the HTTP server (in-flight requests finish), stops the
 * workers (giving their leases up) and releases the database; the process then exits 0, as process
 * managers read any other code as a crash. Failures keep `runMain`'s codes (`teardown`).
 */
import { Cause, Exit, Runtime } from "effect"

export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
