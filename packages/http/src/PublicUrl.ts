/**
 * The public base URL of the server (PUBLIC_URL, else its bound address, as main.ts provides it):
 * the server the OpenAPI document names and the reference page may send test requests to. Unset
 * (a bare `Server.layer`), the document names "/" and the page its own origin only.
 */
import { Context } from "effect"

export const PublicUrl = Context.Reference<string | undefined>("@taskmeter/http/PublicUrl", { defaultValue: () => undefined })
