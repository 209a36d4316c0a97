/**
 * Connect an agent: the MCP address of this server, how an MCP client is pointed at it, and (under
 * a session) a one-time sign-in code for the agent's sign-in page.
 */
import { AgentCode } from "../parts/AgentCode.tsx"
import { CopyButton } from "../parts/CopyButton.tsx"
import type { Who } from "../session.ts"

export const Connect = (props: { readonly who: Who }) => {
  const address = `${location.origin}/mcp`
  const config = JSON.stringify({ mcpServers: { taskmeter: { url: address } } }, null, 2)
  return (
    <>
      <h1>Connect an agent</h1>
      <p>
        Agents use taskmeter's models through the Model Context Protocol (streamable HTTP). Give your MCP client this address; it
        signs in through the browser with an API key of yours or a one-time code, or sends the key as a Bearer token.
      </p>
      <p>
        <code id="mcp-address">{address}</code> <CopyButton text={address} label="Copy the MCP address" />
      </p>
      <h2>Client configuration</h2>
      <pre>{config}</pre>
      <CopyButton text={config} label="Copy the configuration" />
      {props.who.kind === "session" ? <AgentCode /> : null}
    </>
  )
}
