import type { z } from "zod";
import type {
  CronCreateRequest,
  CronJobView,
  CronList,
  CronRunAccepted,
  CronRunList,
  CronUpdateRequest,
  DeliveryList,
  DeliveryView,
  HistoryView,
  SendPolicy,
  SendRequest,
  SendResponse,
  SessionEventList,
  SessionList,
  SessionView,
  SignInView,
  TaskList,
  TokenCreated,
  TokenScope,
  TokenView,
} from "@nahida/contracts";

/**
 * The console's client of the documented REST API, typed from the same zod contracts the
 * gateway validates with (types only: nothing of zod reaches the browser). The browser's
 * sign-in cookie authenticates; every change carries the sign-in's CSRF token.
 */

type Out<T extends z.ZodType> = z.output<T>;
type In<T extends z.ZodType> = z.input<T>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean | undefined>;

export class Api {
  private csrfToken: string | null = null;

  private async call<T>(method: string, path: string, o: { query?: Query; body?: unknown } = {}): Promise<T> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(o.query ?? {})) if (value !== undefined && value !== "") params.set(key, String(value));
    const url = params.size > 0 ? `${path}?${params}` : path;
    const headers: Record<string, string> = { accept: "application/json" };
    if (o.body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && this.csrfToken) headers["x-csrf-token"] = this.csrfToken;
    const response = await fetch(url, { method, headers, credentials: "same-origin", ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    const data = text ? (JSON.parse(text) as unknown) : undefined;
    if (!response.ok) {
      const error = (data as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiError(response.status, error?.code ?? "error", error?.message ?? `${method} ${path}: ${response.status}`);
    }
    return data as T;
  }

  async signIn(token: string): Promise<Out<typeof SignInView>> {
    const signIn = await this.call<Out<typeof SignInView>>("POST", "/api/auth/session", { body: { token } });
    this.csrfToken = signIn.csrf_token;
    return signIn;
  }

  async signInState(): Promise<Out<typeof SignInView>> {
    const signIn = await this.call<Out<typeof SignInView>>("GET", "/api/auth/session");
    this.csrfToken = signIn.csrf_token;
    return signIn;
  }

  async signOut(): Promise<void> {
    await this.call<void>("DELETE", "/api/auth/session");
    this.csrfToken = null;
  }

  sessions = (query: { chat?: string; channel?: string; limit?: number; offset?: number }) => this.call<Out<typeof SessionList>>("GET", "/api/sessions", { query });
  session = (id: string) => this.call<Out<typeof SessionView>>("GET", `/api/sessions/${encodeURIComponent(id)}`);
  history = (id: string, query: { limit?: number; offset?: number } = {}) => this.call<Out<typeof HistoryView>>("GET", `/api/sessions/${encodeURIComponent(id)}/history`, { query });
  events = (id: string) => this.call<Out<typeof SessionEventList>>("GET", `/api/sessions/${encodeURIComponent(id)}/events`);
  tasks = (id: string) => this.call<Out<typeof TaskList>>("GET", `/api/sessions/${encodeURIComponent(id)}/tasks`);
  send = (body: In<typeof SendRequest>) => this.call<Out<typeof SendResponse>>("POST", "/api/send", { body });

  deliveries = (query: { status?: string; uncertain?: boolean; target?: string; limit?: number }) => this.call<Out<typeof DeliveryList>>("GET", "/api/deliveries", { query });
  retryDelivery = (id: string) => this.call<Out<typeof DeliveryView>>("POST", `/api/deliveries/${encodeURIComponent(id)}/retry`);

  cronJobs = () => this.call<Out<typeof CronList>>("GET", "/api/cron", { query: { limit: 200 } });
  createCron = (body: In<typeof CronCreateRequest>) => this.call<Out<typeof CronJobView>>("POST", "/api/cron", { body });
  updateCron = (id: string, body: In<typeof CronUpdateRequest>) => this.call<Out<typeof CronJobView>>("PATCH", `/api/cron/${encodeURIComponent(id)}`, { body });
  runCron = (id: string) => this.call<Out<typeof CronRunAccepted>>("POST", `/api/cron/${encodeURIComponent(id)}/run`);
  cronRuns = (id: string) => this.call<Out<typeof CronRunList>>("GET", `/api/cron/${encodeURIComponent(id)}/runs`, { query: { limit: 20 } });

  policy = () => this.call<Out<typeof SendPolicy>>("GET", "/api/policy/send");
  setPolicy = (body: In<typeof SendPolicy>) => this.call<Out<typeof SendPolicy>>("PUT", "/api/policy/send", { body });

  tokens = () => this.call<{ tokens: Out<typeof TokenView>[] }>("GET", "/api/tokens");
  createToken = (name: string, scopes: z.output<typeof TokenScope>[]) => this.call<Out<typeof TokenCreated>>("POST", "/api/tokens", { body: { name, scopes } });
  revokeToken = (id: string) => this.call<Out<typeof TokenView>>("DELETE", `/api/tokens/${encodeURIComponent(id)}`);

  /** `/api/ready` answers 503 with the same body when a check fails. */
  async ready(): Promise<{ status: string; checks: Record<string, string> }> {
    const response = await fetch("/api/ready", { headers: { accept: "application/json" } });
    return (await response.json()) as { status: string; checks: Record<string, string> };
  }

  async metrics(): Promise<string> {
    const response = await fetch("/metrics");
    if (!response.ok) throw new ApiError(response.status, "error", `GET /metrics: ${response.status}`);
    return response.text();
  }
}
