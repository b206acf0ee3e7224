import helmet from "@fastify/helmet";
import type { FastifyInstance } from "fastify";

export interface PageSecurityOptions {
  /** Who may show these pages in a frame: the gateway itself and these sites, or nobody (`none`). Default the gateway itself. */
  frameAncestors?: readonly string[] | "none";
  /** Other sites may load these resources (an embed script). Default false. */
  crossOriginResources?: boolean;
}

/**
 * The headers of every page the gateway serves to browsers (web chat, console), for the
 * routes of the context it is registered in: a Content-Security-Policy that runs only the
 * gateway's own scripts and styles (no inline script, nothing from a CDN), talks only to
 * the gateway, and is framed only where allowed; plus helmet's other defaults.
 */
export async function registerPageSecurity(app: FastifyInstance, o: PageSecurityOptions = {}): Promise<void> {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: o.frameAncestors === "none" ? ["'none'"] : ["'self'", ...(o.frameAncestors ?? [])],
        objectSrc: ["'none'"],
      },
    },
    // frame-ancestors decides; X-Frame-Options cannot name other sites.
    frameguard: false,
    crossOriginResourcePolicy: { policy: o.crossOriginResources ? "cross-origin" : "same-origin" },
    referrerPolicy: { policy: "no-referrer" },
    // Whether the site is HTTPS-only is the operator's proxy's to say, not this route's.
    strictTransportSecurity: false,
  });
}
