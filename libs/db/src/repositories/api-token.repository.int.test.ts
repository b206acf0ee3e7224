import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../../test/support/infra";
import { ApiTokenRepository, BOOTSTRAP_TOKEN_ID, hashToken } from "./api-token.repository";

describe("ApiTokenRepository bootstrap token", () => {
  let t: TestDatabase;
  let tokens: ApiTokenRepository;
  beforeAll(async () => {
    t = await createTestDatabase("api_tokens");
    tokens = new ApiTokenRepository(t.db.prisma);
  });
  afterAll(async () => t?.drop());

  it("stays revoked across restarts with the same secret, and a new secret revives it", async () => {
    await Promise.all([tokens.upsertBootstrap("first-secret-value-123"), tokens.upsertBootstrap("first-secret-value-123")]);
    await tokens.revoke(BOOTSTRAP_TOKEN_ID);
    await tokens.upsertBootstrap("first-secret-value-123");
    expect((await tokens.findByHash(hashToken("first-secret-value-123")))?.revokedAt).not.toBeNull();

    await tokens.upsertBootstrap("second-secret-value-456");
    expect(await tokens.findByHash(hashToken("first-secret-value-123"))).toBeNull();
    expect((await tokens.findByHash(hashToken("second-secret-value-456")))?.revokedAt).toBeNull();
  });
});
