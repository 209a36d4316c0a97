import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { kernelOver, program } from "../embed-kernel/embed.ts"
import * as Dependencies from "../../test/Dependencies.ts"
import { storage } from "./postgres.ts"

const url = Redacted.make(Dependencies.databaseUrl)

describe("examples/postgres", () => {
  it.live("runs the embedded kernel's flow on PostgreSQL, in a schema of its own", () =>
    Effect.gen(function* () {
      const schema = `example_${randomUUID().replaceAll("-", "").slice(0, 16)}`
      yield* Effect.addFinalizer(() =>
        SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
          Effect.provide(PgClient.layer({ url, maxConnections: 1 })),
          Effect.orDie
        )
      )
      const blobsDir = mkdtempSync(join(tmpdir(), "taskmeter-example-blobs-"))
      const { balances, image, task } = yield* program.pipe(Effect.provide(kernelOver(storage({ url, schema, blobsDir }))))
      expect(task.status).toBe("succeeded")
      expect(image?.contentType).toBe("image/png")
      expect(balances.balanceMicros).toBe(5_000_000 - task.priceMicros)

      const rows = yield* SqlClient.SqlClient.use(
        (sql) => sql<{ status: string }>`SELECT status FROM ${sql(schema)}.tasks WHERE id = ${task.id}`
      ).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })))
      expect(rows).toEqual([{ status: "succeeded" }])
    })
  )
})
