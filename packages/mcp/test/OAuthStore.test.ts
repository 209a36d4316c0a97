import { OAuthStore } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"

OAuthStoreConformance.suite("memory", () => OAuthStore.layerMemory)
