/**
 * Storage port for the chat price list: the same versioned, compare-and-set history as the task
 * price list (PriceStore, whose contract it shares), kept apart from it. ChatPrices.layerStore
 * follows it.
 */
import { Context } from "effect"
import type { PriceStore } from "../pricing/PriceStore.ts"

export class ChatPriceStore extends Context.Service<ChatPriceStore, PriceStore["Service"]>()(
  "@taskmeter/kernel/ChatPriceStore"
) {}
