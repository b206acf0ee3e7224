import type { Database } from "../database";
import { ApiTokenRepository } from "./api-token.repository";
import { ChatTranscriptRepository } from "./chat-transcript.repository";
import { BackgroundTaskRepository } from "./background-task.repository";
import { CompactionRepository } from "./compaction.repository";
import { CronRepository } from "./cron.repository";
import { DeliveryRepository } from "./delivery.repository";
import { InboundMessageRepository } from "./inbound-message.repository";
import { InboundQuarantineRepository } from "./inbound-quarantine.repository";
import { PolicyRepository } from "./policy.repository";
import { RetentionRepository } from "./retention.repository";
import { RunRepository } from "./run.repository";
import { SessionEventRepository } from "./session-event.repository";
import { SessionRepository } from "./session.repository";
import { TurnRepository } from "./turn.repository";

/** Every repository over one client; services take the ones they use. */
export interface Repositories {
  deliveries: DeliveryRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  inbound: InboundMessageRepository;
  tokens: ApiTokenRepository;
  cron: CronRepository;
  events: SessionEventRepository;
  policies: PolicyRepository;
  runs: RunRepository;
  tasks: BackgroundTaskRepository;
  quarantine: InboundQuarantineRepository;
  compactions: CompactionRepository;
  /** A chat's messages in and out, for the web chat's page. */
  transcripts: ChatTranscriptRepository;
  /** The janitor's pruning. */
  retention: RetentionRepository;
}

export function createRepositories(db: Pick<Database, "prisma" | "pool" | "statements">): Repositories {
  const { prisma } = db;
  return {
    deliveries: new DeliveryRepository(db),
    sessions: new SessionRepository(prisma),
    turns: new TurnRepository(prisma),
    inbound: new InboundMessageRepository(db),
    tokens: new ApiTokenRepository(prisma),
    cron: new CronRepository(prisma),
    events: new SessionEventRepository(prisma),
    policies: new PolicyRepository(prisma),
    runs: new RunRepository(db),
    tasks: new BackgroundTaskRepository(prisma),
    quarantine: new InboundQuarantineRepository(prisma),
    compactions: new CompactionRepository(prisma),
    transcripts: new ChatTranscriptRepository(prisma),
    retention: new RetentionRepository(db.pool),
  };
}
