/**
 * The playground's request as code: the same POST /api/v1/jobs body and headers, made with an
 * API key from the environment (TASKMETER_API_KEY) instead of the session.
 */

export interface Request {
  readonly origin: string
  readonly body: unknown
}

const shellQuote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`

export const curl = ({ origin, body }: Request): string =>
  [
    `curl -sS ${origin}/api/v1/jobs \\`,
    '  -H "Authorization: Bearer $TASKMETER_API_KEY" \\',
    '  -H "Content-Type: application/json" \\',
    '  -H "Idempotency-Key: $(uuidgen)" \\',
    `  -d ${shellQuote(JSON.stringify(body))}`
  ].join("\n")

export const typescript = ({ origin, body }: Request): string =>
  [
    `const response = await fetch("${origin}/api/v1/jobs", {`,
    '  method: "POST",',
    "  headers: {",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the snippet's own template literal
    "    authorization: `Bearer ${process.env.TASKMETER_API_KEY}`,",
    '    "content-type": "application/json",',
    '    "idempotency-key": crypto.randomUUID()',
    "  },",
    `  body: JSON.stringify(${JSON.stringify(body, null, 2).replaceAll("\n", "\n  ")})`,
    "})",
    "const task = await response.json()",
    "console.log(task.id, task.status)"
  ].join("\n")

export const python = ({ origin, body }: Request): string =>
  [
    "import json, os, uuid, requests",
    "",
    `body = json.loads(${JSON.stringify(JSON.stringify(body))})`,
    "response = requests.post(",
    `    "${origin}/api/v1/jobs",`,
    "    headers={",
    '        "Authorization": f"Bearer {os.environ[\'TASKMETER_API_KEY\']}",',
    '        "Idempotency-Key": str(uuid.uuid4()),',
    "    },",
    "    json=body,",
    ")",
    "task = response.json()",
    'print(task["id"], task["status"])'
  ].join("\n")
