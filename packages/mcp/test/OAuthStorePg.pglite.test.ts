/**
 * The PostgreSQL OAuthStore on PGlite, the embedded database of `npm start`: the same SQL over
 * its one connection, one PGlite for the file, emptied for each case.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import { Layer } from "effect"
import { OAuthStorePg } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"
import { closeSharedPglite, openSharedPglite, sharedPglite } from "./support/TestDatabase.ts"

OAuthStoreConformance.suite("PGlite", () => OAuthStorePg.layer.pipe(Layer.provide(sharedPglite)))

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
