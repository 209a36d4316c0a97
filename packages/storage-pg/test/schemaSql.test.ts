/** schema.sql is the SQL the migrations produce, so the current tables and functions read in one place. */
import { readFile } from "node:fs/promises"
import { Effect } from "effect"
import { expect, it } from "@effect/vitest"
import { dump, REGENERATE, SCHEMA_FILE } from "./SchemaDump.ts"

it("schema.sql matches a freshly migrated database", async () => {
  const [migrated, committed] = await Promise.all([Effect.runPromise(dump), readFile(SCHEMA_FILE, "utf8")])
  expect(committed, `schema.sql differs from what the migrations produce; run \`${REGENERATE}\` and commit it`).toBe(migrated)
}, 60_000)
