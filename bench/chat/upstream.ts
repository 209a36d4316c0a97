/**
 * The benchmark's mock OpenAI-compatible upstream, in a process of its own: answers at once,
 * a JSON completion with usage, or an event stream of TOKENS chunks then usage. Prints its
 * base URL on stdout.
 */
import { once } from "node:events"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const TOKENS = Number(process.env.TOKENS ?? 20)

const server = createServer((request, response) => {
  let raw = ""
  request.on("data", (chunk) => (raw += chunk))
  request.on("end", () => {
    const body = JSON.parse(raw) as { stream?: boolean; model: string }
    const usage = { prompt_tokens: 20, completion_tokens: TOKENS, total_tokens: 20 + TOKENS }
    if (body.stream !== true) {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(
        JSON.stringify({
          id: "up",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: " tok".repeat(TOKENS) }, finish_reason: "stop" }],
          usage
        })
      )
      return
    }
    response.writeHead(200, { "content-type": "text/event-stream" })
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({
        id: "up",
        object: "chat.completion.chunk",
        created: 1,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }]
      })}\n\n`
    response.write(chunk({ role: "assistant", content: "" }))
    for (let i = 0; i < TOKENS; i++) response.write(chunk({ content: " tok" }))
    response.write(chunk({}, "stop"))
    response.write(`data: ${JSON.stringify({ id: "up", choices: [], usage })}\n\n`)
    response.end("data: [DONE]\n\n")
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1")
await once(server, "listening")
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)
