/**
 * The sign-in page of the authorization server: server-rendered HTML, one inline style sheet (allowed
 * by hash in a strict CSP) and no script. It shows who asks (the client's name, marked unverified
 * when only asserted at registration), where the browser returns (the redirect host) and each
 * permission asked for; the owner signs in with an API key or a one-time sign-in code.
 */
import { createHash } from "node:crypto"
import type { Scope } from "@taskmeter/kernel"
import type { SignInView } from "./AuthorizationServer.ts"

const escape = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const permissions: { readonly [S in Scope.Scope]: { readonly title: string; readonly detail: string } } = {
  "jobs:create": {
    title: "Start tasks that spend your credits",
    detail: "Each task's price is reserved from your balance and charged only if the task succeeds."
  },
  "jobs:read": { title: "See your tasks and their results", detail: "Statuses, prices and download links of your tasks." },
  "usage:read": { title: "See your credit balance", detail: "Available, reserved and total credits." },
  "chat:create": { title: "Send chat requests", detail: "Billed per token from your balance." },
  "billing:create": { title: "Start top-ups", detail: "Checkout links to buy credits; nothing is paid until you pay." },
  "webhooks:manage": { title: "Manage webhooks", detail: "Where task events are sent, and their delivery log." }
}

const STYLE = `
:root{--bg:#f4f5f8;--card:#fff;--text:#161a23;--muted:#5d6475;--line:#e3e6ee;--accent:#4f46e5;--accent-text:#fff;
--warn-bg:#fff6e5;--warn:#8a5a00;--error-bg:#fdecec;--error:#a61b1b;--chip:#eef0f6}
@media (prefers-color-scheme:dark){:root{--bg:#0e1117;--card:#171b24;--text:#e9ecf2;--muted:#9aa3b5;--line:#2a3040;
--accent:#7c75ff;--warn-bg:#2d2410;--warn:#f0c36a;--error-bg:#3a1717;--error:#ff9b9b;--chip:#222838}}
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:24px;
background:var(--bg);color:var(--text);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{width:100%;max-width:440px}
.brand{display:flex;align-items:center;gap:10px;margin:0 0 18px 4px;font-weight:650;letter-spacing:-.01em}
.mark{width:30px;height:30px;border-radius:8px;display:grid;place-items:center;color:#fff;font-size:13px;font-weight:700;
background:linear-gradient(135deg,#6366f1,#a855f7)}
.card{background:var(--card);border:1px solid var(--line);border-radius:16px;padding:28px;box-shadow:0 10px 30px rgba(16,24,40,.08)}
h1{font-size:20px;line-height:1.3;margin:0;letter-spacing:-.015em}
.lead{color:var(--muted);margin:0 0 20px}
.client{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin:0 0 10px}
.chip{display:inline-block;background:var(--chip);border-radius:999px;padding:2px 10px;font-size:12.5px;color:var(--muted)}
.chip.warn{background:var(--warn-bg);color:var(--warn)}
ul{list-style:none;margin:0 0 20px;padding:0;border:1px solid var(--line);border-radius:12px}
li{padding:12px 14px 12px 40px;position:relative}
li+li{border-top:1px solid var(--line)}
li:before{content:"";position:absolute;left:15px;top:18px;width:10px;height:10px;border-radius:3px;background:var(--accent)}
li strong{display:block;font-weight:600}
li span{color:var(--muted);font-size:13.5px}
.dest{font-size:13.5px;color:var(--muted);margin:0 0 20px}
.dest b{color:var(--text);font-weight:600;word-break:break-all}
label{display:block;font-weight:600;margin:0 0 6px}
input[type=password]{width:100%;padding:11px 12px;border-radius:10px;border:1px solid var(--line);background:var(--bg);
color:var(--text);font:14px ui-monospace,SFMono-Regular,Menlo,monospace}
input[type=password]:focus{outline:2px solid var(--accent);outline-offset:1px}
.hint{font-size:12.5px;color:var(--muted);margin:6px 0 20px}
.actions{display:flex;flex-direction:row-reverse;gap:10px}
button{flex:1;padding:11px 14px;border-radius:10px;font:600 14.5px system-ui,sans-serif;cursor:pointer;border:1px solid var(--line);
background:transparent;color:var(--text)}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}
button:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.error{background:var(--error-bg);color:var(--error);border-radius:10px;padding:10px 12px;margin:0 0 16px;font-size:14px}
footer{color:var(--muted);font-size:12.5px;text-align:center;margin-top:16px}
`.trim()

const styleHash = createHash("sha256").update(STYLE, "utf8").digest("base64")

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
  `<meta name="referrer" content="no-referrer"><title>${escape(title)} · taskmeter</title><style>${STYLE}</style></head>` +
  `<body><main><div class="brand"><span class="mark">tm</span>taskmeter</div>${body}</main></body></html>`

/**
 * Response headers of every page: not cached, not framed (clickjacking), no referrer (the
 * redirect carries a code), and a CSP that allows the page's own style sheet and a form that
 * posts here and may be redirected to `formTargets` (browsers apply form-action to the redirect).
 */
export const headers = (formTargets: ReadonlyArray<string> = []): { readonly [name: string]: string } => ({
  "cache-control": "no-store",
  pragma: "no-cache",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy": [
    "default-src 'none'",
    `style-src 'sha256-${styleHash}'`,
    `form-action 'self'${formTargets.map((target) => ` ${target}`).join("")}`,
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join("; ")
})

/** The CSP source that lets the sign-in form's redirect reach a redirect URI. */
export const formTargetOf = (redirectUri: string): string => {
  const url = new URL(redirectUri)
  return url.protocol === "https:" || url.protocol === "http:" ? url.origin : url.protocol
}

export const signIn = (view: SignInView, issuer: string): string => {
  const name = view.clientName ?? "An app"
  const verification = view.clientVerified
    ? `<span class="chip" title="${escape(view.clientId)}">verified: ${escape(new URL(view.clientId).host)}</span>`
    : `<span class="chip warn" title="The app named itself when it registered; check where you will be sent back to.">name not verified</span>`
  const items = view.scopes
    .map(
      (scope) => `<li><strong>${escape(permissions[scope].title)}</strong><span>${escape(permissions[scope].detail)}</span></li>`
    )
    .join("")
  const minutes = Math.max(1, Math.round((view.expiresAt.getTime() - Date.now()) / 60000))
  return page(
    `Sign in to connect ${name}`,
    `<div class="card">` +
      `<div class="client"><h1>${escape(name)} wants to use your taskmeter account</h1>${verification}</div>` +
      `<p class="lead">Sign in to let it act for you, with these permissions:</p>` +
      `<ul>${items}</ul>` +
      `<p class="dest">After you answer, you return to <b>${escape(view.redirectTarget)}</b>. Continue only if you started this from that app.</p>` +
      (view.error === undefined ? "" : `<p class="error" role="alert">${escape(view.error)}</p>`) +
      `<form method="post" action="/authorize">` +
      `<input type="hidden" name="pending" value="${escape(view.pendingId)}">` +
      `<input type="hidden" name="csrf" value="${escape(view.csrfToken)}">` +
      `<label for="credential">API key or sign-in code</label>` +
      `<input id="credential" name="credential" type="password" autocomplete="off" spellcheck="false" required ` +
      `placeholder="tm_… or tmsi_…" autofocus>` +
      `<p class="hint">Your key stays with taskmeter; the app receives its own revocable access, limited to the permissions above ` +
      `and to what this key may do. This page expires in about ${minutes} minute${minutes === 1 ? "" : "s"}.</p>` +
      // Approve comes first so that Enter in the key field approves; the style sheet shows it on the right.
      `<div class="actions"><button type="submit" name="decision" value="approve" class="primary">Approve</button>` +
      `<button type="submit" name="decision" value="deny" formnovalidate>Deny</button></div>` +
      `</form></div>` +
      `<footer>Signing in to ${escape(new URL(issuer).host)}</footer>`
  )
}

export const problem = (title: string, detail: string, issuer: string): string =>
  page(
    title,
    `<div class="card"><h1>${escape(title)}</h1><p class="lead">${escape(detail)}</p>` +
      `<p class="dest">You can close this window.</p></div><footer>${escape(new URL(issuer).host)}</footer>`
  )
