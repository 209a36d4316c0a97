import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { KernelLive, program } from "./embed.ts"

describe("examples/embed-kernel", () => {
  it.live("creates an account, runs an image task on the simulated provider and reads the PNG", () =>
    Effect.gen(function* () {
      const { balances, image, task } = yield* program.pipe(Effect.provide(KernelLive))
      expect(task.status).toBe("succeeded")
      expect(task.chargedMicros).toBe(task.priceMicros)
      expect(image?.contentType).toBe("image/png")
      expect([...image!.bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
      expect(balances).toMatchObject({ balanceMicros: 5_000_000 - task.priceMicros, reservedMicros: 0 })
    })
  )

  it.live("runs as a script", () =>
    Effect.callback<void>((resume) => {
      execFile(process.execPath, [fileURLToPath(new URL("embed.ts", import.meta.url))], { timeout: 30_000 }, (error, stdout) => {
        resume(
          Effect.sync(() => {
            expect(error).toBeNull()
            expect(stdout).toMatch(/succeeded, charged 0\.\d{6} USD/)
            expect(stdout).toMatch(/result: image\/png, \d+ bytes/)
          })
        )
      })
    })
  )
})
