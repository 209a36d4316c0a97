/**
 * The PostgreSQL OAuthStore against the machine's PostgreSQL, each case in the file's schema,
 * emptied, with a pool of four connections, so that the concurrency cases really race.
 */
import { Layer } from "effect"
import { OAuthStorePg } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"
import { postgresPerFile } from "./support/TestDatabase.ts"

const postgres = postgresPerFile()

OAuthStoreConformance.suite("PostgreSQL", () => OAuthStorePg.layer.pipe(Layer.provide(postgres())))
