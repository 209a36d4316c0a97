/**
 * The playground: pick a model (searchable, by category), fill the form generated from its
 * fields, see the price the API will quote as fields change, and Run: exactly the body of POST
 * /api/v1/jobs (with expectedPriceMicros and an Idempotency-Key), the task followed to its end
 * and its result shown inline, with the charge. The same request can be copied as curl,
 * TypeScript or Python made with an API key.
 */
import { useMemo, useState } from "preact/hooks"
import { Effect } from "effect"
import type { Task } from "@taskmeter/kernel"
import { call } from "../api.ts"
import { chargeOf, follow } from "../follow.ts"
import { usd } from "../format.ts"
import { CopyButton } from "../parts/CopyButton.tsx"
import { ModelForm } from "../parts/ModelForm.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { type FormValues, initialValues, inputOf, quote } from "../quote.ts"
import * as Snippets from "../snippets.ts"
import { useLoad } from "../useLoad.ts"
import { TaskView } from "./TaskDetail.tsx"

const CATEGORIES = ["image", "video", "audio", "text"] as const

const loadCatalog = () =>
  call(({ api }) => Effect.all({ models: api.catalog.models(), prices: api.catalog.prices() }, { concurrency: 2 }))

interface Run {
  readonly task: Task.Task | undefined
  readonly charged: number | undefined
  readonly error: unknown
}

export const Playground = () => {
  const catalog = useLoad(loadCatalog)
  const [search, setSearch] = useState("")
  const [category, setCategory] = useState("")
  const [slug, setSlug] = useState("")
  const [values, setValues] = useState<FormValues>({})
  const [run, setRun] = useState<Run | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const models = catalog.data?.models.models ?? []
  const needle = search.trim().toLowerCase()
  const matching = models.filter(
    (model) =>
      (category === "" || model.category === category) &&
      (needle === "" || `${model.slug} ${model.title}`.toLowerCase().includes(needle))
  )
  const model = models.find((candidate) => candidate.slug === slug)
  const input = useMemo(() => (model === undefined ? {} : inputOf(model.fields, values)), [model, values])
  const price = catalog.data?.prices.models.find((entry) => entry.model === slug)
  const quoted = model === undefined ? undefined : quote(price, model.fields, input)
  const body = {
    model: slug,
    input,
    ...(quoted?.kind === "price" ? { expectedPriceMicros: quoted.priceMicros } : {})
  }
  const choose = (next: string) => {
    setSlug(next)
    setRun(undefined)
    const chosen = models.find((candidate) => candidate.slug === next)
    setValues(chosen === undefined ? {} : initialValues(chosen.fields))
  }
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setRun({ task: undefined, charged: undefined, error: undefined })
    try {
      const submitted = await call(({ api }) =>
        api.jobs.create({ headers: { "idempotency-key": crypto.randomUUID() }, payload: body })
      )
      setRun({ task: submitted, charged: undefined, error: undefined })
      const last = await follow(submitted.id, (task) => setRun({ task, charged: undefined, error: undefined }))
      setRun({ task: last, charged: last.status === "succeeded" ? await chargeOf(last.id) : undefined, error: undefined })
    } catch (error) {
      setRun((old) => ({ task: old?.task, charged: undefined, error }))
      catalog.reload()
    } finally {
      setBusy(false)
    }
  }
  const request = { origin: location.origin, body }
  return (
    <>
      <h1>Playground</h1>
      <ErrorNotice error={catalog.error} />
      {catalog.data === undefined && catalog.error === undefined ? <Status>Loading the models…</Status> : null}
      <form class="filters" aria-label="Find a model" onSubmit={(event) => event.preventDefault()}>
        <label class="field">
          <span>Search models</span>
          <input type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
        </label>
        <label class="field">
          <span>Category</span>
          <select value={category} onChange={(event) => setCategory(event.currentTarget.value)}>
            <option value="">All categories</option>
            {CATEGORIES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <label class="field wide">
          <span>Model ({matching.length} found)</span>
          <select id="model" value={slug} onChange={(event) => choose(event.currentTarget.value)}>
            <option value="">Choose a model</option>
            {matching.map((m) => (
              <option key={m.slug} value={m.slug} disabled={m.provider === null}>
                {m.title} — {m.slug}
                {m.provider === null ? " (unavailable)" : ""}
              </option>
            ))}
          </select>
        </label>
      </form>
      {model !== undefined ? (
        <form class="run" aria-label={`Run ${model.title}`} onSubmit={submit}>
          <h2>{model.title}</h2>
          <p>
            {model.description} Produces {model.outputs}.{model.provider === "simulated" ? " Results here are simulated." : ""}
          </p>
          <ModelForm fields={model.fields} values={values} onChange={setValues} />
          <p class="quote" role="status" aria-live="polite">
            {quoted?.kind === "price" ? (
              <>
                Price: <strong id="quote">{usd(quoted.priceMicros)}</strong>
              </>
            ) : (
              quoted?.reason
            )}
          </p>
          <button type="submit" disabled={busy || quoted?.kind !== "price"}>
            {busy ? "Running…" : "Run"}
          </button>
        </form>
      ) : null}
      {run !== undefined ? (
        <section aria-labelledby="result" class="result">
          <h2 id="result">Result</h2>
          <ErrorNotice error={run.error} />
          {run.task === undefined && run.error === undefined ? <Status>Submitting…</Status> : null}
          {run.task !== undefined ? <TaskView task={run.task} charged={run.charged} /> : null}
        </section>
      ) : null}
      {model !== undefined ? (
        <section aria-labelledby="as-code">
          <h2 id="as-code">The same request as code</h2>
          <p>Made with an API key in TASKMETER_API_KEY; create one under API keys.</p>
          {(
            [
              ["curl", Snippets.curl(request)],
              ["TypeScript", Snippets.typescript(request)],
              ["Python", Snippets.python(request)]
            ] as const
          ).map(([language, code]) => (
            <details key={language}>
              <summary>{language}</summary>
              <pre>{code}</pre>
              <CopyButton text={code} label={`Copy as ${language}`} />
            </details>
          ))}
        </section>
      ) : null}
    </>
  )
}
