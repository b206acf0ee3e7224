import type { z } from "zod";
import type { SignInView, TokenScope } from "@nahida/contracts";
import type { Api } from "./api";

/** What every view is given: the API client, who is signed in, and how to move on. */
export interface ConsoleContext {
  api: Api;
  signIn: z.output<typeof SignInView>;
  /** Whether the signed-in token has the scope (an admin token has every one). */
  can(scope: z.output<typeof TokenScope>): boolean;
  /** Shows a route (`/sessions/…`). */
  go(route: string): void;
  /** Shows a message at the top of the page. */
  notify(text: string, tone?: "ok" | "bad"): void;
  /** Where the queue dashboard is, when it is on. */
  queueDashboard: string | null;
}

/** A page of the console: its route's parameters in, its content out. */
export type View = (ctx: ConsoleContext, params: string[]) => Promise<Node>;
