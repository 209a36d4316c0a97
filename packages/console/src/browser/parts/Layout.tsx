/** The signed-in frame: a skip link, the navigation, who is signed in, and the page's main content. */
import type { ComponentChildren } from "preact"
import type { Who } from "../session.ts"
import { Link } from "./Link.tsx"

export const NAV: ReadonlyArray<readonly [string, string]> = [
  ["/", "Overview"],
  ["/playground", "Playground"],
  ["/playground/chat", "Chat playground"],
  ["/tasks", "Tasks"],
  ["/chat-requests", "Chat requests"],
  ["/credits", "Credits"],
  ["/keys", "API keys"],
  ["/webhooks", "Webhooks"],
  ["/connect", "Connect an agent"]
]

/** The operator pages, in the navigation of operators only. */
export const OPERATOR_NAV: ReadonlyArray<readonly [string, string]> = [
  ["/operator/accounts", "Accounts"],
  ["/operator/prices", "Prices"],
  ["/operator/chat-prices", "Chat prices"],
  ["/operator/reconciliation", "Reconciliation queue"],
  ["/operator/revenue", "Revenue"]
]

const isOperator = (who: Who): boolean => who.kind === "session" && who.user.operator

export const Layout = (props: {
  readonly path: string
  readonly who: Who
  readonly onSignOut: (everywhere: boolean) => void
  readonly children: ComponentChildren
}) => (
  <>
    <a class="skip" href="#main">
      Skip to content
    </a>
    <header class="top">
      <span class="brand">taskmeter</span>
      <span class="who">
        {props.who.kind === "session" ? props.who.user.email : props.who.kind === "key" ? "Signed in with an API key" : ""}
      </span>
      {props.who.kind === "session" ? (
        <button type="button" class="secondary everywhere" onClick={() => props.onSignOut(true)}>
          Sign out everywhere
        </button>
      ) : null}
      <button type="button" class="secondary" onClick={() => props.onSignOut(false)}>
        Sign out
      </button>
    </header>
    <div class="frame">
      <nav aria-label="Console">
        <ul>
          {(isOperator(props.who) ? [...NAV, ...OPERATOR_NAV] : NAV).map(([href, label]) => (
            <li key={href}>
              <Link href={href} current={props.path === href || (href === "/tasks" && props.path.startsWith("/tasks/"))}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {props.who.kind === "session" && !props.who.user.emailVerified ? (
          <p class="notice">Verify your email address: open the link we mailed to {props.who.user.email}.</p>
        ) : null}
        {props.children}
      </main>
    </div>
  </>
)

/** The frame of the signed-out pages. */
export const Plain = (props: { readonly children: ComponentChildren }) => (
  <main id="main" class="plain">
    <p class="brand">taskmeter</p>
    {props.children}
  </main>
)
