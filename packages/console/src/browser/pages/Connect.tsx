/** Connect an agent: the MCP address of this server and how an MCP client is pointed at it. */
import { CopyButton } from "../parts/CopyButton.tsx"

export const Connect = () => {
  const address = `${location.origin}/mcp`
  const config = JSON.stringify({ mcpServers: { taskmeter: { url: address } } }, null, 2)
  return (
    <>
      <h1>Connect an agent</h1>
      <p>
        Agents use taskmeter's models through the Model Context Protocol (streamable HTTP). Give your MCP client this address;
        it signs in through the browser with an API key of yours, or sends the key as a Bearer token.
      </p>
      <p>
        <code id="mcp-address">{address}</code> <CopyButton text={address} label="Copy the MCP address" />
      </p>
      <h2>Client configuration</h2>
      <pre>{config}</pre>
      <CopyButton text={config} label="Copy the configuration" />
    </>
  )
}
