import type { z } from "zod";
import type { TokenScope } from "@nahida/contracts";
import { badge, button, h, show, table, time } from "../dom";
import type { View } from "../context";

const SCOPES: z.output<typeof TokenScope>[] = ["read", "send", "cron", "admin"];

/** API tokens: who may do what; a new token's secret is shown once. */
export const tokensView: View = async (ctx) => {
  const list = h("div", {});
  const created = h("div", { class: "created" });
  const load = async () => {
    const { tokens } = await ctx.api.tokens();
    show(
      list,
      table(
        ["Name", "Prefix", "Scopes", "Created", "Last used", ""],
        tokens.map((t) => [
          h("span", {}, t.name, t.revoked_at ? badge("revoked", "bad") : null, t.id === ctx.signIn.token.id ? badge("you", "ok") : null),
          h("code", {}, t.prefix),
          t.scopes.join(", "),
          time(t.created_at),
          time(t.last_used_at),
          t.revoked_at
            ? null
            : button("Revoke", async () => {
                if (!confirm(`Revoke ${t.name}? Scripts using it stop working within seconds.`)) return;
                await ctx.api.revokeToken(t.id).catch((e: Error) => ctx.notify(e.message, "bad"));
                await load();
              }),
        ]),
      ),
    );
  };
  const name = h("input", { name: "name", required: true, placeholder: "deploy-script" });
  const boxes = SCOPES.map((scope) => h("input", { type: "checkbox", name: "scope", value: scope, checked: scope === "read" }));
  const form = h("form", { class: "grid" }, h("label", {}, "Name", name), h("fieldset", {}, h("legend", {}, "Scopes"), ...boxes.map((box) => h("label", { class: "inline" }, box, ` ${box.value}`))), h("button", { type: "submit" }, "Create token"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const scopes = boxes.filter((b) => b.checked).map((b) => b.value as z.output<typeof TokenScope>);
    void ctx.api.createToken(name.value, scopes).then(
      async (token) => {
        form.reset();
        show(created, h("p", {}, "The new token's secret, shown only now: ", h("code", { class: "secret" }, token.token)));
        await load();
      },
      (e: Error) => ctx.notify(e.message, "bad"),
    );
  });
  await load();
  return h("section", {}, h("h2", {}, "API tokens"), list, h("h3", {}, "New token"), form, created);
};
