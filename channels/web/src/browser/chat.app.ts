import type { ChatItem, ClientFrame, ServerFrame } from "../web-chat.protocol";
import { CLOSE_UNAUTHORIZED } from "../web-chat.protocol";
import { el } from "./dom";
import { renderMarkdown } from "./markdown-dom";

/**
 * The web chat page. Messages the visitor writes are kept (in this tab's session storage)
 * until the gateway acknowledges them, and sent again with the same id after a reconnect:
 * the gateway stores each id once, so a resend is never answered twice.
 */

interface Pending {
  /** The page's id for it (the gateway de-duplicates by it). */
  id: string;
  text: string;
  at: string;
  /** The key of the visitor who wrote it, when known: it is never sent as anyone else. */
  visitor: string | null;
}

/**
 * The tab's session storage, or a stand-in for this page's life where the browser denies it
 * (a frame on another site, with third-party storage blocked): the token still comes in the
 * fragment every time the embed opens the page.
 */
const storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> = (() => {
  try {
    window.sessionStorage.getItem("nahida-chat");
    return window.sessionStorage;
  } catch {
    const kept = new Map<string, string>();
    return { getItem: (key) => kept.get(key) ?? null, setItem: (key, value) => void kept.set(key, value), removeItem: (key) => void kept.delete(key) };
  }
})();

const body = document.body;
const socketPath = body.dataset.socket ?? "/chat/ws";
const storageKey = (what: string) => `nahida-chat:${socketPath}:${what}`;

// A token from the site that opened the page travels in the fragment (never sent to a
// server, never logged). Any fragment replaces what this tab kept: `#anonymous` (the embed
// script without a token) forgets the last visitor's token.
if (location.hash.length > 1) {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash !== storage.getItem(storageKey("token"))) {
    // Another visitor from here on: nothing of the last one (their unsent messages, their key) stays.
    for (const what of ["token", "visitor", "pending"]) storage.removeItem(storageKey(what));
    if (fromHash) storage.setItem(storageKey("token"), fromHash);
  }
  history.replaceState(null, "", location.pathname + location.search);
}
const token = storage.getItem(storageKey("token")) ?? undefined;
/** `crypto.randomUUID` exists only on HTTPS and localhost; a page on plain HTTP elsewhere still needs ids. */
const newId = () => (crypto.randomUUID ? crypto.randomUUID() : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(""));

const status = el("span", { class: "status", role: "status", "data-state": "connecting" }, ["Connecting…"]);
const list = el("ol", { class: "messages", "aria-live": "polite" });
const typing = el("div", { class: "typing", hidden: "" }, ["typing…"]);
const input = el("textarea", { name: "text", rows: "2", maxlength: "4000", placeholder: "Write a message", "aria-label": "Message" });
const composer = el("form", { class: "composer" }, [input, el("button", { type: "submit" }, ["Send"])]);
body.append(el("main", { class: "chat" }, [el("header", {}, [el("h1", {}, [body.dataset.title ?? "Chat"]), status]), list, typing, composer]));

const pending = new Map<string, Pending>(JSON.parse(storage.getItem(storageKey("pending")) ?? "[]").map((p: Pending) => [p.id, p]));
const savePending = () => storage.setItem(storageKey("pending"), JSON.stringify([...pending.values()]));
/** The signed-in visitor's key (what their messages carry as sender); the last one this tab knew until `ready`. */
let me: string | null = storage.getItem(storageKey("visitor"));
let socket: WebSocket | null = null;
let ready = false;
let attempt = 0;
/** Messages sent and not yet acknowledged; a few at a time, so a backlog never floods the socket. */
const inFlight = new Set<string>();
const MAX_IN_FLIGHT = 8;
let typingTimer: number | undefined;

function setStatus(state: "connecting" | "online" | "offline" | "signed-out", text: string): void {
  status.dataset.state = state;
  status.textContent = text;
}

function send(frame: ClientFrame): void {
  if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
}

/** Sends unsent messages, oldest first, at most a few unacknowledged at once. */
function flushPending(): void {
  if (!ready) return;
  for (const p of pending.values()) {
    if (inFlight.size >= MAX_IN_FLIGHT) return;
    if (inFlight.has(p.id) || waiting.has(p.id)) continue;
    inFlight.add(p.id);
    send({ type: "message", id: p.id, text: p.text });
  }
}
/** Messages held back by the rate limit until their time. */
const waiting = new Set<string>();

/** The element of a message this page wrote, by the page's id. */
const pendingElement = (clientId: string) => list.querySelector<HTMLLIElement>(`li[data-client-id="${CSS.escape(clientId)}"]`);

/** Shows an item once, wherever its time puts it; a second copy of an id only updates the first. */
function show(item: ChatItem, state?: "pending" | "sent" | "failed", note?: string): void {
  const mine = item.from === "visitor" && (item.sender === undefined || item.sender.key === me);
  // The gateway names a visitor's message `<sender key>:<page id>`; this page wrote it under its own id.
  const clientId = mine ? item.id.slice(item.id.indexOf(":") + 1) : null;
  let li = (clientId !== null ? pendingElement(clientId) : null) ?? list.querySelector<HTMLLIElement>(`li[data-id="${CSS.escape(item.id)}"]`);
  if (!li) {
    li = el("li", { class: `message ${item.from}${mine ? " mine" : ""}`, "data-id": item.id, "data-at": item.at, ...(clientId !== null ? { "data-client-id": clientId } : {}) });
    if (item.from === "visitor" && !mine && item.sender) li.append(el("div", { class: "sender" }, [item.sender.name]));
    const content = el("div", { class: "body" });
    if (item.from === "bot") content.append(renderMarkdown(item.text));
    else content.append(el("p", {}, [item.text]));
    if (item.attachment) {
      const label = item.attachment.caption ?? item.attachment.name ?? item.attachment.type;
      const url = item.attachment.url && /^https?:\/\//.test(item.attachment.url) ? item.attachment.url : undefined;
      content.append(el("p", { class: "attachment" }, [url ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer nofollow" }, [label]) : `📎 ${label}`]));
    }
    li.append(content, el("div", { class: "meta" }, [new Date(item.at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })]));
    const later = [...list.children].find((other) => ((other as HTMLElement).dataset.at ?? "") > item.at);
    list.insertBefore(li, later ?? null);
    li.scrollIntoView({ block: "end" });
  }
  if (state) li.dataset.state = state;
  const meta = li.querySelector(".meta");
  if (meta && note !== undefined) meta.setAttribute("data-note", note);
}

/** A message this page wrote, before the gateway has named it. */
function showPending(p: Pending, state: "pending" | "failed", note?: string): void {
  show({ id: `${p.visitor ?? "?"}:${p.id}`, from: "visitor", text: p.text, at: p.at }, state, note);
}

function handle(frame: ServerFrame): void {
  switch (frame.type) {
    case "ready":
      me = frame.visitor.key;
      storage.setItem(storageKey("visitor"), me);
      ready = true;
      setStatus("online", "Online");
      for (const p of pending.values()) {
        // Written by someone else in this tab (signed out, and another signed in): never theirs to send.
        if (p.visitor !== null && p.visitor !== me) {
          pending.delete(p.id);
          pendingElement(p.id)?.remove();
        }
      }
      savePending();
      inFlight.clear();
      flushPending();
      return;
    case "history":
      // Only now is the connection known to work: a gateway that accepts the hello but cannot
      // read the history must not be retried at full speed.
      attempt = 0;
      for (const item of frame.items) show(item, "sent");
      body.dataset.history = "loaded";
      return;
    case "message":
      show(frame.item, "sent");
      if (frame.item.from === "bot") typing.hidden = true;
      return;
    case "ack":
      pending.delete(frame.id);
      inFlight.delete(frame.id);
      savePending();
      flushPending();
      pendingElement(frame.id)?.setAttribute("data-state", "sent");
      return;
    case "typing":
      typing.hidden = false;
      clearTimeout(typingTimer);
      typingTimer = window.setTimeout(() => (typing.hidden = true), 6_000);
      return;
    case "error":
      return failed(frame);
    default: {
      const unreachable: never = frame;
      console.warn("unknown frame", unreachable);
    }
  }
}

function failed(frame: Extract<ServerFrame, { type: "error" }>): void {
  if (frame.code === "unauthorized") {
    setStatus("signed-out", frame.message);
    return;
  }
  if (!frame.id) return;
  const p = pending.get(frame.id);
  inFlight.delete(frame.id);
  if (frame.code === "rate_limited" && p) {
    showPending(p, "failed", `waiting ${frame.retryAfterSeconds ?? 10} s`);
    waiting.add(p.id);
    window.setTimeout(() => {
      waiting.delete(p.id);
      flushPending();
    }, (frame.retryAfterSeconds ?? 10) * 1000);
    return;
  }
  if (frame.code === "bad_frame" && p) {
    pending.delete(p.id);
    savePending();
    showPending(p, "failed", frame.message);
  }
}

function connect(): void {
  setStatus("connecting", attempt === 0 ? "Connecting…" : "Reconnecting…");
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${socketPath}`);
  socket = ws;
  ws.addEventListener("open", () => send({ type: "hello", ...(token ? { token } : {}) }));
  ws.addEventListener("message", (event) => handle(JSON.parse(String(event.data)) as ServerFrame));
  ws.addEventListener("close", (event) => {
    ready = false;
    inFlight.clear();
    body.dataset.history = "";
    if (socket !== ws) return;
    if (event.code === CLOSE_UNAUTHORIZED) {
      if (status.dataset.state !== "signed-out") setStatus("signed-out", "This chat could not sign you in.");
      return;
    }
    setStatus("offline", "Offline: your messages are sent when the connection is back");
    attempt++;
    // 1012: the gateway asks every page at once to come back (its Redis subscription was
    // cut); spread them over a few seconds rather than at the same instant.
    const spread = event.code === 1012 ? Math.random() * 3_000 : 0;
    window.setTimeout(connect, spread + Math.min(5_000, 250 * 2 ** attempt) * (0.75 + Math.random() / 2));
  });
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  const p: Pending = { id: newId(), text, at: new Date().toISOString(), visitor: me };
  pending.set(p.id, p);
  savePending();
  showPending(p, "pending");
  flushPending();
  input.value = "";
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    composer.requestSubmit();
  }
});

for (const p of pending.values()) showPending(p, "pending");
connect();
