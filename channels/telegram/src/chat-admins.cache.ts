import type { Api } from "grammy";

const FAILED_LOOKUP_TTL_MS = 30_000;

interface Entry {
  roles: Map<string, string[]>;
  expiresAt: number;
}

/**
 * Role tags (`owner`, `admin`) of group members from getChatAdministrators, cached per chat
 * so a busy group costs one API call per `ttlMs`. A failed lookup means "no roles", never a
 * lost message.
 */
export class ChatAdminsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly api: Api,
    private readonly ttlMs = 10 * 60_000,
    private readonly maxChats = 10_000,
  ) {}

  /** Makes sure the chat's admins are loaded (or recently failed to load). */
  async prefetch(chatId: string): Promise<void> {
    const entry = this.entries.get(chatId);
    if (entry && entry.expiresAt > Date.now()) return;
    let pending = this.inFlight.get(chatId);
    if (!pending) {
      pending = this.load(chatId).finally(() => this.inFlight.delete(chatId));
      this.inFlight.set(chatId, pending);
    }
    await pending;
  }

  rolesFor(chatId: string, userId: string): string[] {
    return this.entries.get(chatId)?.roles.get(userId) ?? [];
  }

  private async load(chatId: string): Promise<void> {
    const roles = new Map<string, string[]>();
    let ttlMs = this.ttlMs;
    try {
      const admins = await this.api.getChatAdministrators(chatId);
      for (const member of admins) {
        roles.set(String(member.user.id), [member.status === "creator" ? "owner" : "admin"]);
      }
    } catch {
      // Not allowed to list admins, or Telegram hiccuped: tag nobody, and ask again soon
      // rather than treating real admins as members for the full TTL.
      ttlMs = FAILED_LOOKUP_TTL_MS;
    }
    if (this.entries.size >= this.maxChats) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(chatId, { roles, expiresAt: Date.now() + ttlMs });
  }
}
