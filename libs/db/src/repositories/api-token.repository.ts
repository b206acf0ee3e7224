import { createHash, randomBytes } from "node:crypto";
import type { PrismaClient } from "../database";
import type { ApiToken } from "../generated/prisma/client";

/** Fixed id of the token bootstrapped from NAHIDA_API_TOKEN, so changing the variable rotates it. */
export const BOOTSTRAP_TOKEN_ID = "00000000-0000-4000-8000-000000000001";

export const hashToken = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex");

/** A new secret: 32 random bytes, URL-safe, with a recognisable prefix. */
export const generateTokenSecret = (): string => `nah_${randomBytes(32).toString("base64url")}`;

/** API tokens; secrets are never stored, only their sha256. */
export class ApiTokenRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async create(name: string, scopes: string[]): Promise<{ token: ApiToken; secret: string }> {
    const secret = generateTokenSecret();
    const token = await this.prisma.apiToken.create({
      data: { name, scopes, tokenHash: hashToken(secret), prefix: secret.slice(0, 10) },
    });
    return { token, secret };
  }

  /**
   * Makes NAHIDA_API_TOKEN an admin token and retires the previous value. A revoked
   * bootstrap token stays revoked across restarts; setting a new value revives the row.
   */
  async upsertBootstrap(secret: string): Promise<void> {
    try {
      await this.upsertBootstrapOnce(secret);
    } catch (error) {
      // Two replicas inserting the first row at once: the loser trips the token_hash index
      // (ON CONFLICT arbitrates only on id). The row exists now, so a second try updates it.
      if ((error as { code?: string }).code !== "P2010" && !String((error as Error).message).includes("23505")) throw error;
      await this.upsertBootstrapOnce(secret);
    }
  }

  private async upsertBootstrapOnce(secret: string): Promise<void> {
    await this.prisma.$executeRaw`
      INSERT INTO api_tokens (id, name, token_hash, prefix, scopes)
      VALUES (${BOOTSTRAP_TOKEN_ID}::uuid, 'NAHIDA_API_TOKEN', ${hashToken(secret)}, ${secret.slice(0, 4)}, ARRAY['admin'])
      ON CONFLICT (id) DO UPDATE
        SET revoked_at = CASE WHEN api_tokens.token_hash = EXCLUDED.token_hash THEN api_tokens.revoked_at END,
            token_hash = EXCLUDED.token_hash, prefix = EXCLUDED.prefix, scopes = EXCLUDED.scopes`;
  }

  async findByHash(tokenHash: string): Promise<ApiToken | null> {
    return this.prisma.apiToken.findUnique({ where: { tokenHash } });
  }

  async list(): Promise<ApiToken[]> {
    return this.prisma.apiToken.findMany({ orderBy: { createdAt: "asc" } });
  }

  async revoke(id: string): Promise<ApiToken | null> {
    const existing = await this.prisma.apiToken.findUnique({ where: { id } });
    if (!existing) return null;
    if (existing.revokedAt) return existing;
    return this.prisma.apiToken.update({ where: { id }, data: { revokedAt: new Date() } });
  }

  /** Records use at most once a minute per token, to keep reads from turning into writes. */
  async touch(id: string): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE api_tokens SET last_used_at = now()
       WHERE id = ${id}::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`;
  }
}
