import { describe, expect, it } from "@effect/vitest"
import * as AdmissionRules from "../../src/tasks/AdmissionRules.ts"

describe("AdmissionRules", () => {
  it("the store's rules keep their places in the whole order", () => {
    const inOrder = AdmissionRules.order.filter((rule) => (AdmissionRules.inStore as ReadonlyArray<string>).includes(rule))
    expect(inOrder).toEqual(AdmissionRules.inStore)
  })
})
