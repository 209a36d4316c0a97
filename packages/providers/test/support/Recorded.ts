/** What a fake upstream saw: each request's method, URL, headers and JSON body. */
export interface Recorded {
  readonly method: string
  readonly url: URL
  readonly headers: Headers
  readonly body: unknown
}

export const record = async (request: Request): Promise<Recorded> => ({
  method: request.method,
  url: new URL(request.url),
  headers: request.headers,
  body:
    request.method === "GET"
      ? undefined
      : await request
          .clone()
          .json()
          .catch(() => undefined)
})

export const CDN = "https://cdn.example.test/results"
