/**
 * The console app: loads who is signed in, routes the path to its page, and keeps signed-out
 * visitors on the sign-in pages. Each page sets the document title and moves focus to its main
 * content on navigation, so keyboard and screen-reader users land on the new page.
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ErrorNotice } from "./parts/Notice.tsx"
import { Layout, NAV, OPERATOR_NAV } from "./parts/Layout.tsx"
import { AuthPage } from "./pages/Auth.tsx"
import { ChatPlayground } from "./pages/ChatPlayground.tsx"
import { ChatRequests } from "./pages/ChatRequests.tsx"
import { Connect } from "./pages/Connect.tsx"
import { Credits } from "./pages/Credits.tsx"
import { Keys } from "./pages/Keys.tsx"
import { Overview } from "./pages/Overview.tsx"
import { Playground } from "./pages/Playground.tsx"
import { TaskDetail } from "./pages/TaskDetail.tsx"
import { Webhooks } from "./pages/Webhooks.tsx"
import { Tasks } from "./pages/Tasks.tsx"
import { OperatorAccounts } from "./pages/operator/Accounts.tsx"
import { OperatorChatPrices } from "./pages/operator/ChatPrices.tsx"
import { OperatorPrices } from "./pages/operator/Prices.tsx"
import { OperatorReconciliation } from "./pages/operator/Reconciliation.tsx"
import { OperatorRevenue } from "./pages/operator/Revenue.tsx"
import { navigate, useLocation } from "./router.ts"
import * as Session from "./session.ts"

const SIGNED_OUT = new Set(["/sign-in", "/sign-up", "/verify-email", "/reset-password"])

const titleOf = (path: string): string =>
  path.startsWith("/tasks/") ? "Task" : ([...NAV, ...OPERATOR_NAV].find(([href]) => href === path)?.[1] ?? "Sign in")

const Page = (props: { readonly path: string; readonly who: Session.Who }) => {
  const { path, who } = props
  if (path.startsWith("/tasks/")) return <TaskDetail id={decodeURIComponent(path.slice("/tasks/".length))} />
  switch (path) {
    case "/playground":
      return <Playground />
    case "/playground/chat":
      return <ChatPlayground />
    case "/tasks":
      return <Tasks />
    case "/chat-requests":
      return <ChatRequests />
    case "/credits":
      return <Credits />
    case "/keys":
      return <Keys who={who} />
    case "/connect":
      return <Connect who={who} />
    case "/operator/accounts":
      return <OperatorAccounts />
    case "/operator/prices":
      return <OperatorPrices />
    case "/operator/chat-prices":
      return <OperatorChatPrices />
    case "/operator/reconciliation":
      return <OperatorReconciliation />
    case "/operator/revenue":
      return <OperatorRevenue />
    case "/webhooks":
      return <Webhooks />
    default:
      return <Overview />
  }
}

const App = () => {
  const here = useLocation()
  const [who, setWho] = useState<Session.Who | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  useEffect(() => {
    Session.load().then(setWho, setError)
  }, [])
  const path = here.pathname
  const signedOutPage = SIGNED_OUT.has(path)
  useEffect(() => {
    if (who === undefined) return
    if (who.kind === "none" && !signedOutPage) navigate("/sign-in", true)
    document.title = `${titleOf(path)} · taskmeter`
    document.getElementById("main")?.focus({ preventScroll: true })
  }, [who, path, signedOutPage])
  if (error !== undefined) return <ErrorNotice error={error} />
  if (who === undefined) return <p role="status">Loading…</p>
  if (signedOutPage || who.kind === "none") {
    return (
      <AuthPage
        path={path}
        query={here.searchParams}
        onSignedIn={(next) => {
          setWho(next)
          navigate("/")
        }}
        onSignedUp={setWho}
      />
    )
  }
  return (
    <Layout
      path={path}
      who={who}
      onSignOut={async (everywhere) => {
        await Session.signOut(who, everywhere).catch(setError)
        setWho({ kind: "none" })
        navigate("/sign-in")
      }}
    >
      <Page path={path} who={who} />
    </Layout>
  )
}

const root = document.getElementById("app")
if (root !== null) render(<App />, root)
