/**
 * The PostgreSQL OAuthStore against the machine's PostgreSQL, each case in a fresh schema with a
 * pool of four connections, so that the concurrency cases really race.
 */
import { Layer } from "effect"
import { OAuthStorePg } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"
import { postgres } from "./support/TestDatabase.ts"

OAuthStoreConformance.suite("PostgreSQL", () => OAuthStorePg.layer.pipe(Layer.provide(postgres)))
