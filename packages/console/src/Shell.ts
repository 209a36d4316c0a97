/**
 * The one HTML document of every console page: it loads the hashed script and style and nothing
 * from elsewhere, under a Content-Security-Policy that allows only this origin.
 */
import type { Built } from "./Bundle.ts"
import { ASSETS_PREFIX } from "./Pages.ts"

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

export const html = (built: Built): string =>
  [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    "<title>taskmeter console</title>",
    '<link rel="icon" href="data:,">',
    `<link rel="stylesheet" href="${ASSETS_PREFIX}${built.style.name}">`,
    `<script type="module" src="${ASSETS_PREFIX}${built.script.name}"></script>`,
    "</head>",
    "<body>",
    '<div id="app"><noscript>The taskmeter console needs JavaScript.</noscript></div>',
    "</body>",
    "</html>"
  ].join("\n")
