import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { visitorToken } from "../../../examples/web-chat/visitor-token";
import { newAnonymousVisitor, verifyVisitorToken, visitorFromCookie } from "./web-visitor";

const SECRET = "web-visitor-test-secret-0123456789abcdef";
const NOW = new Date("2026-12-02T10:00:00Z");
const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

function sign(claims: Record<string, unknown>, options: { secret?: string; alg?: string; exp?: number | null } = {}): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? "HS256" }).setIssuedAt(seconds(NOW));
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? seconds(NOW) + 3600);
  return jwt.sign(new TextEncoder().encode(options.secret ?? SECRET));
}

describe("visitor tokens", () => {
  it("accepts the documented ten-line example from an operator's site", async () => {
    const token = visitorToken({ id: "customer-1842", name: "Lena" }, SECRET, NOW);
    expect(await verifyVisitorToken(token, SECRET, NOW)).toEqual({ ok: true, value: { id: "customer-1842", name: "Lena" } });
  });

  it("takes the visitor's id, name and room from the claims", async () => {
    expect(await verifyVisitorToken(await sign({ sub: "kai", name: "Kai", room: "lobby" }), SECRET, NOW)).toEqual({ ok: true, value: { id: "kai", name: "Kai", room: "lobby" } });
    // Without a name, never the id (room members would see it).
    const unnamed = await verifyVisitorToken(await sign({ sub: "customer@example.com", room: "lobby" }), SECRET, NOW);
    expect(unnamed.ok && unnamed.value.name).toMatch(/^Visitor [A-Za-z0-9_-]{4}$/);
  });

  it.each([
    ["another secret", sign({ sub: "eve" }, { secret: "a-different-secret-0123456789abcdef" }), "not a JWT signed (HS256)"],
    ["no expiry", sign({ sub: "eve" }, { exp: null }), "exp claim is missing"],
    ["an expired token", sign({ sub: "eve" }, { exp: seconds(NOW) - 120 }), "has expired"],
    ["a token valid for a year", sign({ sub: "eve" }, { exp: seconds(NOW) + 365 * 86400 }), "more than 30 days"],
    ["no subject", sign({}), "sub claim is missing"],
    ["a token issued in the future", new SignJWT({ sub: "eve" }).setProtectedHeader({ alg: "HS256" }).setIssuedAt(seconds(NOW) + 86400 * 365).setExpirationTime(seconds(NOW) + 86400 * 366).sign(new TextEncoder().encode(SECRET)), "iat is in the future"],
    ["a subject with a colon", sign({ sub: "a:b" }), "sub must be"],
    ["an anonymous visitor's id", sign({ sub: "anon-AAAAAAAAAAAAAAAA" }), "not start with anon-"],
    ["a bad room", sign({ sub: "eve", room: "../x" }), "room must be"],
    ["not a JWT", Promise.resolve("hello"), "not a JWT"],
    ["alg none", Promise.resolve(`${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from('{"sub":"eve","exp":9999999999}').toString("base64url")}.`), "not a JWT"],
  ])("refuses %s and says why", async (_label, token, reason) => {
    const result = await verifyVisitorToken(await token, SECRET, NOW);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(reason);
  });
});

describe("anonymous visitors", () => {
  it("knows a visitor by the cookie it was given, and nobody by a forged or foreign one", () => {
    const { visitor, cookie } = newAnonymousVisitor(SECRET);
    expect(visitor.id).toMatch(/^anon-[A-Za-z0-9_-]{16}$/);
    expect(visitorFromCookie(cookie, SECRET)).toEqual(visitor);
    expect(visitorFromCookie(cookie, "another-secret-0123456789abcdef0123")).toBeNull();
    expect(visitorFromCookie(cookie.replace(/.$/, (c) => (c === "A" ? "B" : "A")), SECRET)).toBeNull();
    expect(visitorFromCookie(`anon-AAAAAAAAAAAAAAAA.${cookie.split(".")[1]}`, SECRET)).toBeNull();
    expect(visitorFromCookie(undefined, SECRET)).toBeNull();
    expect(visitorFromCookie("garbage", SECRET)).toBeNull();
  });
});
