// On your site's server: a visitor token for a signed-in customer (a JWT, HS256, an hour).
import { createHmac } from "node:crypto";

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

export function visitorToken(user: { id: string; name: string }, secret: string, now = new Date()): string {
  const iat = Math.floor(now.getTime() / 1000);
  const unsigned = `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url({ sub: user.id, name: user.name, iat, exp: iat + 3600 })}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}
// In the page: <script src="https://bot.example.com/chat/embed.js" data-token="…" async></script>
