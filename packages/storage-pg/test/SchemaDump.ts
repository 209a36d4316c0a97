/**
 * The SQL the migrations produce: a fresh schema on the test PostgreSQL (TEST_DATABASE_URL), migrated,
 * dumped by `pg_dump --schema-only` and stripped of the schema name, comments and session settings.
 * Run directly (`npm run schema:dump -w packages/storage-pg`) it rewrites `schema.sql`.
 */
import { execFile } from "node:child_process"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { promisify } from "node:util"
import { Effect, Layer } from "effect"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

export const SCHEMA_FILE = join(import.meta.dirname, "..", "schema.sql")

export const REGENERATE = "npm run schema:dump -w packages/storage-pg"

const HEADER = `-- The schema the migrations in src/migrations produce, dumped from a freshly migrated database.
-- Generated: do not edit; run \`${REGENERATE}\` after changing a migration.
`

/** pg_dump's text for `schema`, without what varies between runs and servers. */
export const normalize = (dump: string, schema: string): string =>
  HEADER +
  dump
    .split("\n")
    .filter((line) => !/^(--|SET |SELECT pg_catalog\.set_config|\\(un)?restrict |CREATE SCHEMA )/.test(line))
    .join("\n")
    .replaceAll(`${schema}.`, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim() +
  "\n"

/** Migrates a fresh schema, dumps it, and drops it again. */
export const dump: Effect.Effect<string, unknown> = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(
    PgStore.layer({ url, schema, listen: false, maxConnections: 1 }).pipe(Layer.provideMerge(dropSchemaAfter(schema)))
  )
  const { stdout } = yield* Effect.tryPromise(() =>
    promisify(execFile)(
      process.env.PG_DUMP ?? "pg_dump",
      ["--schema-only", "--no-owner", "--no-privileges", `--schema=${schema}`, url],
      { maxBuffer: 64 * 1024 * 1024 }
    )
  )
  return normalize(stdout, schema)
}).pipe(Effect.scoped)

if (import.meta.main) {
  await writeFile(SCHEMA_FILE, await Effect.runPromise(dump))
  console.log(`Wrote ${SCHEMA_FILE}`)
}
