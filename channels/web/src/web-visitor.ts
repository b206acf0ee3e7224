import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { errors, jwtVerify } from "jose";
import { err, ok, type Result } from "@nahida/contracts";

/** Who is chatting: from the operator's token, or an anonymous cookie. */
export interface Visitor {
  /** Part of the chat address (`web:private:<id>`): no `:` and no whitespace. */
  id: string;
  name: string;
  /** A room (`web:group:<room>`) the token puts the visitor in; a private chat without one. */
  room?: string;
}

const VISITOR_ID = /^[A-Za-z0-9_.@-]{1,64}$/;
const ROOM_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Anonymous visitors' ids; a token may not claim one. */
const ANONYMOUS_PREFIX = "anon-";
/** A token valid for longer than this is refused: a leaked one must not work for ever. */
const MAX_TOKEN_LIFETIME_SECONDS = 30 * 24 * 3600;
/** Clocks differ this much at most between the operator's site and the gateway. */
const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * The visitor a token from the operator's site names: a JWT signed with HS256 and the
 * channel's secret, with `sub` (the visitor's id), `exp` and optionally `name` and `room`.
 * Every refusal says why, without echoing the token.
 */
export async function verifyVisitorToken(token: string, secret: string, now: Date): Promise<Result<Visitor, string>> {
  let claims: Record<string, unknown>;
  try {
    const verified = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: ["HS256"],
      requiredClaims: ["sub", "exp"],
      currentDate: now,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    });
    claims = verified.payload;
  } catch (error) {
    if (error instanceof errors.JWTExpired) return err("the visitor token has expired");
    if (error instanceof errors.JWTClaimValidationFailed) return err(`the visitor token's ${error.claim} claim is missing or invalid`);
    return err("the visitor token is not a JWT signed (HS256) with this chat's secret");
  }
  const { sub, name, room, exp, iat } = claims;
  if (typeof sub !== "string" || !VISITOR_ID.test(sub) || sub.startsWith(ANONYMOUS_PREFIX)) {
    return err(`the visitor token's sub must be 1-64 characters of A-Z a-z 0-9 _ . @ - and not start with ${ANONYMOUS_PREFIX}`);
  }
  const nowSeconds = now.getTime() / 1000;
  if (typeof iat === "number" && iat > nowSeconds + CLOCK_TOLERANCE_SECONDS) return err("the visitor token's iat is in the future");
  // From now, not from iat: a token issued "in the future" must not stretch its life.
  if (typeof exp === "number" && exp - nowSeconds > MAX_TOKEN_LIFETIME_SECONDS) return err("the visitor token is valid for more than 30 days");
  if (room !== undefined && (typeof room !== "string" || !ROOM_ID.test(room))) return err("the visitor token's room must be 1-64 characters of A-Z a-z 0-9 _ -");
  // Without a name, not the id: room members would see it (an operator's customer id, an email).
  const shown = typeof name === "string" && name.trim() !== "" ? name.trim().slice(0, 64) : `Visitor ${visitorKey(secret, sub).slice(0, 4)}`;
  return ok({ id: sub, name: shown, ...(typeof room === "string" ? { room } : {}) });
}

const sign = (secret: string, id: string) => createHmac("sha256", secret).update(`anonymous-visitor:${id}`).digest("base64url");

/** A new anonymous visitor and the cookie value that names it (`<id>.<signature>`). */
export function newAnonymousVisitor(secret: string): { visitor: Visitor; cookie: string } {
  const id = `${ANONYMOUS_PREFIX}${randomBytes(12).toString("base64url")}`;
  return { visitor: anonymousVisitor(id), cookie: `${id}.${sign(secret, id)}` };
}

/** The anonymous visitor a cookie value names, if its signature is this secret's. */
export function visitorFromCookie(value: string | undefined, secret: string): Visitor | null {
  const match = /^(anon-[A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/.exec(value ?? "");
  if (!match) return null;
  const [, id, signature] = match as unknown as [string, string, string];
  const expected = Buffer.from(sign(secret, id));
  return timingSafeEqual(expected, Buffer.from(signature)) ? anonymousVisitor(id) : null;
}

function anonymousVisitor(id: string): Visitor {
  return { id, name: `Visitor ${id.slice(ANONYMOUS_PREFIX.length, ANONYMOUS_PREFIX.length + 4)}` };
}

/** The opaque key a visitor's messages carry in a room: stable, and not their id. */
export function visitorKey(secret: string, visitorId: string): string {
  return createHmac("sha256", secret).update(`visitor-key:${visitorId}`).digest("base64url").slice(0, 16);
}
