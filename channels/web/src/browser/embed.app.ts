/**
 * The embed script: `<script src="https://bot.example.com/chat/embed.js" data-token="…" async></script>`
 * on the operator's page adds a chat button that opens the chat page in a frame. The token
 * (optional: anonymous chats need none) goes in the frame's fragment, which no server sees.
 * Styles are set on the elements, so the host page's policy decides nothing here.
 */
const script = document.currentScript as HTMLScriptElement | null;
if (script) {
  const source = new URL(script.src);
  const chatUrl = new URL(source.pathname.replace(/\/embed\.js$/, ""), source.origin);
  const token = script.dataset.token;
  // Always a fragment: without a token, `anonymous` tells the page to forget any token this
  // tab kept from an earlier visitor (a sign-out on the operator's site).
  chatUrl.hash = token ? `token=${encodeURIComponent(token)}` : "anonymous";

  const frame = document.createElement("iframe");
  frame.title = script.dataset.title ?? "Chat";
  frame.src = chatUrl.toString();
  Object.assign(frame.style, { position: "fixed", right: "20px", bottom: "84px", width: "min(380px, calc(100vw - 40px))", height: "min(560px, calc(100vh - 120px))", border: "0", borderRadius: "12px", boxShadow: "0 8px 32px rgba(0,0,0,.25)", display: "none", zIndex: "2147483646", background: "#fff" });

  const button = document.createElement("button");
  button.type = "button";
  button.textContent = script.dataset.label ?? "Chat";
  button.setAttribute("aria-expanded", "false");
  Object.assign(button.style, { position: "fixed", right: "20px", bottom: "20px", height: "48px", padding: "0 20px", border: "0", borderRadius: "24px", background: script.dataset.color ?? "#3b6d4a", color: "#fff", font: "600 15px system-ui, sans-serif", cursor: "pointer", zIndex: "2147483647" });
  button.addEventListener("click", () => {
    const open = frame.style.display === "none";
    frame.style.display = open ? "block" : "none";
    button.setAttribute("aria-expanded", String(open));
  });
  document.body.append(frame, button);
}
