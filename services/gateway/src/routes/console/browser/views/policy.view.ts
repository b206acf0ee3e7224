import { h } from "../dom";
import type { View } from "../context";

/** The send policy: what agents may send to other chats and sessions. Admin tokens may change it. */
export const policyView: View = async (ctx) => {
  const policy = await ctx.api.policy();
  const editor = h("textarea", { name: "policy", rows: "14", class: "code", "aria-label": "Send policy (JSON)", readonly: !ctx.can("admin") });
  editor.value = JSON.stringify(policy, null, 2);
  const form = h("form", {}, editor, ctx.can("admin") ? h("button", { type: "submit" }, "Save policy") : null);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(editor.value);
    } catch {
      return ctx.notify("The policy is not valid JSON", "bad");
    }
    void ctx.api.setPolicy(parsed as Parameters<typeof ctx.api.setPolicy>[0]).then(
      (saved) => {
        editor.value = JSON.stringify(saved, null, 2);
        ctx.notify("The send policy is saved", "ok");
      },
      (e: Error) => ctx.notify(e.message, "bad"),
    );
  });
  return h(
    "section",
    {},
    h("h2", {}, "Send policy"),
    h("p", { class: "muted" }, "The first rule whose fields all match a target decides (allow or deny); otherwise the default. It applies to what agents send to other chats and sessions."),
    form,
  );
};
