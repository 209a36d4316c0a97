/**
 * The console's addresses: every page the browser app routes to (each served the same HTML
 * shell, so a reload or a link lands on the page), and where its bundled files are served.
 */

export const ASSETS_PREFIX = "/console/assets/"

/** The pages, as HttpRouter paths. Signed-out pages first. */
export const PATHS = [
  "/",
  "/sign-in",
  "/sign-up",
  "/verify-email",
  "/reset-password",
  "/keys",
  "/credits",
  "/tasks",
  "/tasks/:id",
  "/chat-requests",
  "/playground",
  "/playground/chat",
  "/connect",
  "/webhooks",
  "/operator/accounts",
  "/operator/prices",
  "/operator/reconciliation",
  "/operator/revenue"
] as const
