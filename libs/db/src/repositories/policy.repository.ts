import { DEFAULT_SEND_POLICY, SendPolicy } from "@nahida/contracts";
import type { PrismaClient } from "../database";
import { pgJson } from "../statements";

const SEND_POLICY = "send";

/** Named policy documents edited over REST (`policies`); `send` is the agents' send policy. */
export class PolicyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The send policy; the default (allow everything) until an admin stores one. */
  async sendPolicy(): Promise<SendPolicy> {
    const row = await this.prisma.policy.findUnique({ where: { name: SEND_POLICY } });
    if (!row) return DEFAULT_SEND_POLICY;
    // Written only through `putSendPolicy`, which validates; a hand-edited bad document denies.
    const parsed = SendPolicy.safeParse(row.document);
    return parsed.success ? parsed.data : { default: "deny", rules: [] };
  }

  async putSendPolicy(policy: SendPolicy): Promise<void> {
    await this.prisma.policy.upsert({
      where: { name: SEND_POLICY },
      create: { name: SEND_POLICY, document: pgJson(policy) },
      update: { document: pgJson(policy), updatedAt: new Date() },
    });
  }
}
