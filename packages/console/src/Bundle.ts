/**
 * The console's browser code, bundled in memory by esbuild from `src/browser` (TypeScript and
 * TSX on Preact, one CSS file): nothing is written to disk and nothing is committed. `build`
 * names each file by a hash of its bytes, so the server can let browsers keep them for a year,
 * and gzips it once.
 * Node built-ins (and undici, and the Buffer global), reached only by kernel code the browser
 * never runs, become the inert stand-in of Inert.ts.
 */
import { createHash } from "node:crypto"
import { dirname } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import * as esbuild from "esbuild"

export interface Asset {
  /** `<stem>-<hash>.<ext>`, as it is served under ASSETS_PREFIX. */
  readonly name: string
  readonly contentType: string
  readonly bytes: Uint8Array
  /** The same bytes gzipped, for browsers that accept it. */
  readonly gzipped: Uint8Array
}

export interface Built {
  readonly script: Asset
  readonly style: Asset
}

const browserDir = fileURLToPath(new URL("./browser/", import.meta.url))

const nodeOnly = /^(node:.*|undici)$/

const inertModule = fileURLToPath(new URL("./Inert.ts", import.meta.url))

const stubNodeOnly: esbuild.Plugin = {
  name: "stub-node-only",
  setup(build) {
    build.onResolve({ filter: nodeOnly }, (args) => ({ path: args.path, namespace: "node-only" }))
    build.onLoad({ filter: /.*/, namespace: "node-only" }, () => ({
      contents: `module.exports = require(${JSON.stringify(inertModule)}).inert`,
      resolveDir: dirname(inertModule),
      loader: "js"
    }))
  }
}

const hashed = (stem: string, ext: string, contentType: string, bytes: Uint8Array): Asset => ({
  name: `${stem}-${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}.${ext}`,
  contentType,
  bytes,
  gzipped: gzipSync(bytes, { level: 9 })
})

/** Bundles and minifies the console; about a second. */
export const build = async (): Promise<Built> => {
  const result = await esbuild.build({
    entryPoints: { app: `${browserDir}main.tsx`, style: `${browserDir}style.css` },
    outdir: "/console",
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    inject: [inertModule],
    logLevel: "silent",
    plugins: [stubNodeOnly]
  })
  const file = (ext: string) => {
    const output = result.outputFiles.find((candidate) => candidate.path.endsWith(ext))
    if (output === undefined) throw new Error(`esbuild produced no ${ext} file`)
    return output.contents
  }
  return {
    script: hashed("app", "js", "text/javascript; charset=utf-8", file(".js")),
    style: hashed("style", "css", "text/css; charset=utf-8", file(".css"))
  }
}
