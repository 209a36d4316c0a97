/**
 * A real SMTP server in the test process (`smtp-server` on 127.0.0.1, no TLS, no auth) that keeps
 * every message it receives, decoded from quoted-printable, for tests that read links out of mail.
 */
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface Received {
  readonly from: string
  readonly to: ReadonlyArray<string>
  /** The raw message, soft line breaks and =XX escapes decoded. */
  readonly text: string
}

export interface Inbox {
  /** smtp://127.0.0.1:<port> */
  readonly url: string
  readonly received: ReadonlyArray<Received>
  readonly close: () => Promise<void>
}

const decodeQuotedPrintable = (raw: string): string =>
  raw.replaceAll(/=\r?\n/g, "").replaceAll(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))

export const start = (): Promise<Inbox> => {
  const received: Array<Received> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          text: decodeQuotedPrintable(Buffer.concat(chunks).toString("utf8"))
        })
        callback()
      })
    }
  })
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.server.address() as AddressInfo
      resolve({
        url: `smtp://127.0.0.1:${port}`,
        received,
        close: () => new Promise<void>((done) => server.close(() => done()))
      })
    })
  })
}
