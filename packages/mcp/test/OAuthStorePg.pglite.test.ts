/**
 * The PostgreSQL OAuthStore on PGlite, the embedded database of `npm start`: the same SQL over
 * its one connection, each case in a schema of its own.
 */
import { afterAll } from "@effect/vitest"
import { Layer } from "effect"
import { OAuthStorePg } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"
import { pglite, removePglite } from "./support/TestDatabase.ts"

OAuthStoreConformance.suite("PGlite", () => OAuthStorePg.layer.pipe(Layer.provide(pglite)))

afterAll(removePglite)
