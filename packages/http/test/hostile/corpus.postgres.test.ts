/**
 * The hostile-input corpus (CorpusSuite.ts) against the composed server on storage-pg, on the
 * PostgreSQL at TEST_DATABASE_URL (a schema of its own, dropped afterwards): what a hostile
 * string does once it reaches the database (jsonb and text refuse U+0000, for one).
 *
 * Never skipped: this file is the corpus's PostgreSQL run and nothing else, so without a
 * PostgreSQL it fails, naming the address (under CI=true already when support/stores.ts is
 * imported, as every http suite's storage-pg run does; storage-pg's *.postgres tests fail alike).
 */
import { databaseUrl, postgresReachable } from "../support/stores.ts"
import * as CorpusSuite from "./CorpusSuite.ts"

if (!postgresReachable) {
  throw new Error(
    `The hostile-input corpus on storage-pg needs PostgreSQL: none answers at ${new URL(databaseUrl).host} ` +
      `(set TEST_DATABASE_URL, or run corpus.test.ts alone for storage-memory).`
  )
}

CorpusSuite.define("hostile-input corpus, storage-pg (PostgreSQL)", await CorpusSuite.prepare("postgres"))
