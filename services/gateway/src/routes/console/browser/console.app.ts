import type { z } from "zod";
import type { SignInView } from "@nahida/contracts";
import { Api, ApiError } from "./api";
import type { ConsoleContext, View } from "./context";
import { button, h, show } from "./dom";
import { cronView } from "./views/cron.view";
import { deliveriesView } from "./views/deliveries.view";
import { healthView } from "./views/health.view";
import { policyView } from "./views/policy.view";
import { sessionView } from "./views/session.view";
import { sessionsView } from "./views/sessions.view";
import { tokensView } from "./views/tokens.view";

/**
 * The operators' console: a hash-routed page over the documented REST API. The browser
 * signs in once with an API token (kept by the gateway behind an HttpOnly cookie, never by
 * this page); the token's scopes decide which pages and buttons appear, and the API
 * enforces them again.
 */

interface Route {
  pattern: RegExp;
  view: View;
  title: string;
  /** Shown in the menu. */
  nav?: string;
}

const ROUTES: Route[] = [
  { pattern: /^\/sessions$/, view: sessionsView, title: "Sessions", nav: "/sessions" },
  { pattern: /^\/sessions\/([0-9a-f-]{36})$/, view: sessionView, title: "Session" },
  { pattern: /^\/deliveries$/, view: deliveriesView, title: "Deliveries", nav: "/deliveries" },
  { pattern: /^\/cron$/, view: cronView, title: "Cron", nav: "/cron" },
  { pattern: /^\/policy$/, view: policyView, title: "Send policy", nav: "/policy" },
  { pattern: /^\/tokens$/, view: tokensView, title: "Tokens", nav: "/tokens" },
  { pattern: /^\/health$/, view: healthView, title: "Health", nav: "/health" },
];
/** Pages a token without the scope does not see. */
const NEEDS: Record<string, "read" | "admin"> = { "/sessions": "read", "/deliveries": "read", "/cron": "read", "/policy": "admin", "/tokens": "admin" };

const api = new Api();
const queueDashboard = document.body.dataset.queueDashboard || null;
const banner = h("div", { class: "banner", role: "status", hidden: true });
const main = h("main", {});
const nav = h("nav", {});
document.body.append(h("header", {}, h("h1", {}, "Nahida"), nav), banner, main);

function notify(text: string, tone: "ok" | "bad" = "ok"): void {
  banner.hidden = false;
  banner.className = `banner ${tone}`;
  banner.textContent = text;
}

/** Where to go after signing in: a path of this gateway (the queue dashboard), never another site. */
function nextPath(): string | null {
  const next = new URLSearchParams(location.search).get("next");
  return next && /^\/[a-z]/.test(next) ? next : null;
}

function signInForm(message?: string): Node {
  const token = h("input", { type: "password", name: "token", autocomplete: "off", required: true, "aria-label": "API token" });
  const form = h("form", { class: "sign-in" }, h("h2", {}, "Sign in"), h("p", { class: "muted" }, "With an API token; its scopes decide what this console shows and allows."), message ? h("p", { class: "banner bad" }, message) : null, token, h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void api.signIn(token.value.trim()).then(
      (signIn) => {
        const next = nextPath();
        if (next) location.assign(next);
        else start(signIn);
      },
      (e: Error) => show(main, signInForm(e instanceof ApiError && e.status === 401 ? "That token is not valid." : e.message)),
    );
  });
  return form;
}

function start(signIn: z.output<typeof SignInView>): void {
  const ctx: ConsoleContext = {
    api,
    signIn,
    can: (scope) => signIn.token.scopes.includes("admin") || signIn.token.scopes.includes(scope),
    go: (route) => (location.hash = `#${route}`),
    notify,
    queueDashboard,
  };
  const visible = ROUTES.filter((r) => r.nav && (!NEEDS[r.nav] || ctx.can(NEEDS[r.nav]!)));
  show(
    nav,
    ...visible.map((r) => h("a", { href: `#${r.nav}`, "data-route": r.nav }, r.title)),
    queueDashboard && ctx.can("admin") ? h("a", { href: queueDashboard }, "Queues ↗") : null,
    h("span", { class: "who" }, `${signIn.token.name} (${signIn.token.scopes.join(", ")})`),
    button("Sign out", async () => {
      await api.signOut().catch(() => undefined);
      show(nav);
      show(main, signInForm());
    }),
  );
  const render = async () => {
    const path = location.hash.slice(1) || visible[0]?.nav || "/health";
    const route = ROUTES.find((r) => r.pattern.test(path));
    banner.hidden = true;
    for (const a of nav.querySelectorAll("a[data-route]")) a.classList.toggle("active", path.startsWith(a.getAttribute("data-route")!));
    if (!route) return show(main, h("p", {}, "No such page."));
    document.title = `${route.title} · Nahida console`;
    show(main, h("p", { class: "muted" }, "Loading…"));
    try {
      show(main, await route.view(ctx, route.pattern.exec(path)!.slice(1)));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return show(nav), show(main, signInForm("Your sign-in has ended."));
      show(main, h("p", { class: "banner bad" }, (e as Error).message));
    }
  };
  window.onhashchange = () => void render();
  void render();
}

api.signInState().then(
  (signIn) => {
    // Already signed in and sent here on the way somewhere (the queue dashboard): go on.
    const next = nextPath();
    if (next) location.assign(next);
    else start(signIn);
  },
  () => show(main, signInForm()),
);
