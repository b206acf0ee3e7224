import type { ChannelModule } from "@nahida/channels";
import { milkyChannel } from "@nahida/channel-milky";
import { telegramChannel } from "@nahida/channel-telegram";

/** Every channel kind this build can run; a new channel is one module and one entry here. */
export const CHANNEL_MODULES: readonly ChannelModule[] = [telegramChannel, milkyChannel];

export function channelModule(kind: string): ChannelModule {
  const module = CHANNEL_MODULES.find((m) => m.kind === kind);
  if (!module) throw new RangeError(`no channel module of kind ${JSON.stringify(kind)}`);
  return module;
}
