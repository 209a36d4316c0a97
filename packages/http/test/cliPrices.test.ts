/**
 * The `taskmeter admin` CLI's price, chat price, budget, task and payment commands, as an operator
 * runs them: a child process against the composed server (the harness in cliSupport.ts).
 */
import { Effect, Redacted } from "effect"
import { ChatStore, Ids, Money } from "@taskmeter/kernel"
import { expect, layer } from "@effect/vitest"
import { vi } from "vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HeldTask } from "@taskmeter/kernel/testing"
import { USD, token, HELD_MODEL, TestServer, baseUrl, run, admin, adminFails } from "./cliSupport.ts"

// Each command is a fresh Node process (about a second of start-up; over 15 s measured on a 2-core
// machine shared by seven test runs, so a command may take up to a minute before it is killed).
vi.setConfig({ testTimeout: 120_000 })

layer(TestServer, { excludeTestServices: true })("taskmeter admin (child process)", (it) => {
  it.effect("price set (micros, usd, rate card), price disable, price list", () =>
    Effect.gen(function* () {
      expect(yield* admin("price", "set", "--model", "alpha-2-lite-text-to-image-economy", "--micros", "31000")).toEqual({
        enabled: true,
        priceMicros: 31_000
      })
      expect(yield* admin("price", "set", "--model", "alpha-2-lite-text-to-image-economy", "--usd", "0.032")).toEqual({
        enabled: true,
        priceMicros: 32_000
      })
      const rateCard = [
        { when: { resolution: ["1k", "2k"] }, priceMicros: 50_000 },
        { when: { resolution: "4k" }, priceMicros: 90_000 }
      ]
      expect(
        yield* admin("price", "set", "--model", "alpha-2-text-to-image-economy", "--rate-card", JSON.stringify(rateCard))
      ).toEqual({ enabled: true, rateCard })
      yield* admin("price", "disable", "--model", "alpha-2-text-to-image-economy")
      const list = yield* admin("price", "list")
      expect(list.models["alpha-2-lite-text-to-image-economy"]).toEqual({ enabled: true, priceMicros: 32_000 })
      expect(list.models["alpha-2-text-to-image-economy"]).toEqual({ enabled: false, rateCard })
      const refused = yield* adminFails(
        "price",
        "set",
        "--model",
        "alpha-2-text-to-image-economy",
        "--rate-card",
        '[{"when":{},"priceMicros":1},{"when":{},"priceMicros":2}]'
      )
      expect(refused.reason).toBe("PriceListInvalid")
    })
  )

  it.effect("chat-price set (tiers, a new model), chat-price disable, chat-price list", () =>
    Effect.gen(function* () {
      const tiers = [
        { upToPromptTokens: 8000, promptMicrosPerMillion: 120_000, completionMicrosPerMillion: 480_000 },
        { upToPromptTokens: null, promptMicrosPerMillion: 240_000, completionMicrosPerMillion: 960_000 }
      ]
      expect(yield* admin("chat-price", "set", "--model", "taskmeter-local", "--tiers", JSON.stringify(tiers))).toMatchObject({
        enabled: true,
        provider: "local",
        contextLength: 32_768,
        tiers
      })
      const added = yield* admin(
        "chat-price",
        "set",
        "--model",
        "local-small",
        "--provider",
        "local",
        "--context-length",
        "4096",
        "--tiers",
        JSON.stringify(tiers.slice(1))
      )
      expect(added).toEqual({ enabled: true, provider: "local", contextLength: 4096, tiers: tiers.slice(1) })
      yield* admin("chat-price", "disable", "--model", "local-small")
      const list = yield* admin("chat-price", "list")
      expect(list.models["taskmeter-local"].tiers).toEqual(tiers)
      expect(list.models["local-small"].enabled).toBe(false)
      // A new model without its upstream and context length is refused, naming what is missing.
      const refused = yield* adminFails("chat-price", "set", "--model", "other", "--tiers", JSON.stringify(tiers))
      expect(refused.reason).toBe("PriceListInvalid")
      expect(refused.message).toContain("provider")
    })
  )

  it.effect("price set --daily-budget-usd: alone, with a price, kept by a price change, removed with none", () =>
    Effect.gen(function* () {
      const model = "alpha-pro-text-to-image-economy"
      const before = (yield* admin("price", "list")).models[model]
      expect(before.rateCard).toBeDefined()
      // A budget alone leaves the rate card as it is.
      expect(yield* admin("price", "set", "--model", model, "--daily-budget-usd", "100.000001")).toEqual({
        ...before,
        dailyBudgetMicros: 100_000_001
      })
      expect(yield* admin("price", "set", "--model", model, "--usd", "0.09")).toEqual({
        enabled: true,
        priceMicros: 90_000,
        dailyBudgetMicros: 100_000_001
      })
      expect(yield* admin("price", "set", "--model", model, "--micros", "95000", "--daily-budget-usd", "2.5")).toEqual({
        enabled: true,
        priceMicros: 95_000,
        dailyBudgetMicros: 2_500_000
      })

      const url = yield* baseUrl
      const flags = ["--url", url, "--token", Redacted.value(token)]
      const listed = yield* run(["admin", ...flags, "price", "list"])
      expect(listed.stdout).toContain(`${model}  enabled  0.095000 USD  daily budget 2.500000 USD`)
      for (const bad of ["0", "lots"]) {
        const refused = yield* run(["admin", ...flags, "price", "set", "--model", model, "--daily-budget-usd", bad])
        expect(refused.code).not.toBe(0)
        expect(refused.stderr).toContain("--daily-budget-usd")
      }
      const nothing = yield* run(["admin", ...flags, "price", "set", "--model", model])
      expect(nothing.code).toBe(1)
      expect(nothing.stderr).toContain("--daily-budget-usd")

      expect(yield* admin("price", "set", "--model", model, "--daily-budget-usd", "none")).toEqual({
        enabled: true,
        priceMicros: 95_000
      })
    })
  )

  it.effect(
    "chat-margin: per model and upstream, charged, upstream cost, margin and shortfall; a reversed range is refused",
    () =>
      Effect.gen(function* () {
        const { account } = yield* admin("account", "create", "--credits-usd", "5")
        const store = yield* ChatStore.ChatStore
        const leaseId = `lease_cli_${account.id}`
        const at = new Date("2031-03-01T10:00:00.000Z")
        yield* store.lease({
          id: leaseId,
          accountId: account.id,
          needMicros: Money.micros(USD),
          wantMicros: Money.micros(USD),
          at,
          expiresAt: new Date(at.getTime() + 60_000)
        })
        const settled = (upstream: string | null, chargeMicros: number, cost: number | null, shortfall = 0) => ({
          leaseId,
          id: Ids.makeChatRequestId(),
          accountId: account.id,
          apiKeyId: null,
          model: "chat-pro",
          reservedMicros: Money.micros(USD / 2),
          tiers: [],
          createdAt: at,
          status: "succeeded" as const,
          usage: { promptTokens: 10, completionTokens: 10 },
          finishReason: "stop",
          errorCode: null,
          chargeMicros: Money.micros(chargeMicros),
          completedAt: at,
          upstream,
          upstreamCostMicros: cost === null ? null : Money.micros(cost),
          shortfallMicros: Money.micros(shortfall)
        })
        yield* store.settleLeased([
          settled("backup", 30_000, 12_000, 700),
          settled("backup", 20_000, 9_000),
          settled(null, 5_000, null)
        ])
        yield* store.closeLeases([leaseId], at)
        const margin = yield* admin("chat-margin", "--from", "2031-03-01T00:00:00Z", "--to", "2031-03-02T00:00:00Z")
        expect(margin).toEqual({
          from: "2031-03-01T00:00:00.000Z",
          to: "2031-03-02T00:00:00.000Z",
          rows: [
            {
              model: "chat-pro",
              upstream: null,
              requests: 1,
              chargedMicros: 5_000,
              upstreamCostMicros: 0,
              marginMicros: 5_000,
              shortfallMicros: 0
            },
            {
              model: "chat-pro",
              upstream: "backup",
              requests: 2,
              chargedMicros: 50_000,
              upstreamCostMicros: 21_000,
              marginMicros: 29_000,
              shortfallMicros: 700
            }
          ]
        })
        const url = yield* baseUrl
        const human = yield* run(
          ["admin", "--url", url, "chat-margin", "--from", "2031-03-01T00:00:00Z", "--to", "2031-03-02T00:00:00Z"],
          { TASKMETER_ADMIN_TOKEN: Redacted.value(token) }
        )
        expect(human.stdout).toContain(
          "chat-pro  backup  2 requests  charged 0.050000 USD  upstream cost 0.021000 USD  margin 0.029000 USD  shortfall 0.000700 USD"
        )
        const refused = yield* adminFails("chat-margin", "--from", "2031-03-02T00:00:00Z", "--to", "2031-03-01T00:00:00Z")
        expect(refused.reason).toBe("InvalidRequest")
      })
  )

  it.effect("revenue: per UTC day and model with totals, as JSON and as a table; a reversed or bad period is refused", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create", "--credits-usd", "5")
      const store = yield* ChatStore.ChatStore
      const leaseId = `lease_revenue_${account.id}`
      const day = (date: string) => new Date(`${date}T12:00:00.000Z`)
      yield* store.lease({
        id: leaseId,
        accountId: account.id,
        needMicros: Money.micros(USD),
        wantMicros: Money.micros(USD),
        at: day("2032-04-01"),
        expiresAt: day("2032-04-03")
      })
      const settled = (model: string, createdAt: Date, chargeMicros: number, cost: number) => ({
        leaseId,
        id: Ids.makeChatRequestId(),
        accountId: account.id,
        apiKeyId: null,
        model,
        reservedMicros: Money.micros(USD / 4),
        tiers: [],
        createdAt,
        status: "succeeded" as const,
        usage: { promptTokens: 10, completionTokens: 10 },
        finishReason: "stop",
        errorCode: null,
        chargeMicros: Money.micros(chargeMicros),
        completedAt: createdAt,
        upstream: "primary",
        upstreamCostMicros: Money.micros(cost),
        shortfallMicros: Money.micros(0)
      })
      yield* store.settleLeased([
        settled("chat-pro", day("2032-04-01"), 30_000, 12_000),
        settled("chat-pro", day("2032-04-02"), 20_000, 9_000),
        settled("chat-mini", day("2032-04-02"), 5_000, 1_000),
        settled("chat-pro", day("2032-04-03"), 7_000, 7_000)
      ])
      yield* store.closeLeases([leaseId], day("2032-04-03"))
      const zero = { tasksCharged: 0, taskChargedMicros: 0, tasksReleased: 0, taskReleasedMicros: 0, chatShortfallMicros: 0 }
      const chats = (chatRequests: number, chatChargedMicros: number, chatUpstreamCostMicros: number) => ({
        ...zero,
        chatRequests,
        chatChargedMicros,
        chatUpstreamCostMicros
      })
      expect(yield* admin("revenue", "--from", "2032-04-01", "--to", "2032-04-02")).toEqual({
        from: "2032-04-01",
        to: "2032-04-02",
        rows: [
          { day: "2032-04-01", model: "chat-pro", ...chats(1, 30_000, 12_000) },
          { day: "2032-04-02", model: "chat-mini", ...chats(1, 5_000, 1_000) },
          { day: "2032-04-02", model: "chat-pro", ...chats(1, 20_000, 9_000) }
        ],
        refunds: [],
        totals: { ...chats(3, 55_000, 22_000), refunds: 0, refundedMicros: 0 },
        truncated: false
      })
      const url = yield* baseUrl
      const human = yield* run(["admin", "--url", url, "revenue", "--from", "2032-04-02", "--to", "2032-04-02"], {
        TASKMETER_ADMIN_TOKEN: Redacted.value(token)
      })
      const lines = human.stdout.split("\n")
      expect(lines[0]).toBe("Revenue from 2032-04-02 to 2032-04-02 (UTC days, amounts in USD):")
      expect(lines[1]).toMatch(/^day\s+model\s+tasks\s+task charged/)
      expect(lines[2]).toMatch(/^2032-04-02\s+chat-mini\s+0\s+0\.000000\s+0\s+0\.000000\s+1\s+0\.005000\s+0\.001000\s+0\.000000$/)
      expect(lines[4]).toMatch(/^total\s+0\s+0\.000000\s+0\s+0\.000000\s+2\s+0\.025000\s+0\.010000\s+0\.000000$/)
      expect(human.stdout).toContain("refunds in total: 0, 0.000000 USD")
      for (const [from, to] of [
        ["2032-04-02", "2032-04-01"],
        ["2032-02-30", "2032-03-01"],
        ["2030-01-01", "2032-01-01"]
      ]) {
        expect((yield* adminFails("revenue", "--from", from ?? "", "--to", to ?? "")).reason).toBe("InvalidRequest")
      }
    })
  )

  it.effect("task list shows the operator queue; task resolve settles with results and a reason", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create", "--credits-usd", "5")
      const succeeded = yield* HeldTask.make(account.id, 2 * USD, HELD_MODEL, "submit: HTTP 502 from the upstream")
      const failed = yield* HeldTask.make(account.id, USD, HELD_MODEL)
      const queue = (yield* admin("task", "list", "--status", "reconciliation_required")) as {
        tasks: Array<{ id: string; upstreamAnswer: string | null; priceMicros: number }>
      }
      expect(queue.tasks.find((t) => t.id === succeeded)).toMatchObject({
        priceMicros: 2 * USD,
        upstreamAnswer: "submit: HTTP 502 from the upstream"
      })
      const url = yield* baseUrl
      const shown = yield* run([
        "admin",
        "--url",
        url,
        "--token",
        Redacted.value(token),
        "task",
        "list",
        "--status",
        "reconciliation_required"
      ])
      expect(shown.stdout).toContain(`${succeeded}  ${HELD_MODEL}  ${account.id}  price 2.000000 USD`)
      expect(shown.stdout).toContain("last upstream answer: submit: HTTP 502 from the upstream")

      const withoutResults = ["task", "resolve", "--task", succeeded, "--account", account.id, "--outcome", "succeeded"]
      expect((yield* adminFails(...withoutResults, "--reason", "seen upstream")).reason).toBe("InvalidRequest")
      const file = join(mkdtempSync(join(tmpdir(), "taskmeter-result-")), "lyrics.txt")
      writeFileSync(file, "la la la\n")
      const resolved = yield* admin(...withoutResults, "--charge-usd", "1.5", "--result-file", file, "--reason", "seen upstream")
      expect(resolved).toMatchObject({ status: "succeeded", chargedMicros: 1_500_000 })
      expect(yield* admin("task", "resolve", "--task", failed, "--outcome", "failed", "--reason", "never ran")).toMatchObject({
        status: "failed"
      })
      const balances = yield* admin("account", "show", "--account", account.id)
      expect(balances.balances).toMatchObject({ balanceMicros: 3_500_000, reservedMicros: 0 })
      expect((yield* adminFails("task", "resolve", "--task", failed, "--outcome", "failed", "--reason", "again")).reason).toBe(
        "TaskNotResolvable"
      )
    })
  )

  it.effect("payments list, events --unapplied and reconcile, on a server without a payment processor", () =>
    Effect.gen(function* () {
      const url = yield* baseUrl
      const { account } = yield* admin("account", "create", "--name", "payer")
      expect(yield* admin("payments", "list", "--account", account.id)).toEqual([])
      const human = yield* run(["admin", "--url", url, "payments", "events", "--unapplied"], {
        TASKMETER_ADMIN_TOKEN: Redacted.value(token)
      })
      expect(human).toMatchObject({ code: 0, stdout: "Every payment event received is applied.\n" })
      const refused = yield* adminFails("payments", "reconcile", "--from", "2030-01-01", "--to", "2030-01-02")
      expect(refused).toEqual({ reason: "PaymentsNotConfigured", message: expect.stringContaining("STRIPE_SECRET_KEY") })
    })
  )
})
