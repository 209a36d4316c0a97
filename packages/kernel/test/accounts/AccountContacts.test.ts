import { describe, expect, it } from "@effect/vitest"
import { emailsAmong } from "../../src/accounts/AccountContacts.ts"
import * as Ids from "../../src/domain/Ids.ts"
import type { Member, Role } from "../../src/users/UserStore.ts"

const member = (email: string, role: Role, verified: boolean): Member => ({
  user: {
    id: Ids.makeUserId(),
    email,
    emailVerifiedAt: verified ? new Date(0) : null,
    passwordHash: null,
    operator: false,
    createdAt: new Date(0)
  },
  role
})

describe("AccountContacts.emailsAmong", () => {
  it("answers the verified addresses, owners first, leaving the unverified out", () => {
    const members = [
      member("m1@example.com", "member", true),
      member("o1@example.com", "owner", false),
      member("o2@example.com", "owner", true),
      member("m2@example.com", "member", false)
    ]
    expect(emailsAmong(members)).toEqual(["o2@example.com", "m1@example.com"])
  })

  it("answers every address, owners first, when none is verified", () => {
    const members = [member("m1@example.com", "member", false), member("o1@example.com", "owner", false)]
    expect(emailsAmong(members)).toEqual(["o1@example.com", "m1@example.com"])
  })

  it("answers none for an account without users", () => {
    expect(emailsAmong([])).toEqual([])
  })
})
