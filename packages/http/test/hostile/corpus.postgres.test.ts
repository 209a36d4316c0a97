/**
 * The hostile-input corpus (CorpusSuite.ts) against the composed server on storage-pg, on the
 * PostgreSQL at TEST_DATABASE_URL (a schema of its own, dropped afterwards): what a hostile
 * string does once it reaches the database (jsonb and text refuse U+0000, for one). Needs
 * PostgreSQL (test/Dependencies.ts).
 */
import * as CorpusSuite from "./CorpusSuite.ts"

CorpusSuite.define("hostile-input corpus, storage-pg (PostgreSQL)", await CorpusSuite.prepare("postgres"))
