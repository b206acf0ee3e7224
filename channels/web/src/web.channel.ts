import type { ChannelConfigIssue, ChannelInstance, ChannelModule } from "@nahida/channels";
import { systemClock } from "@nahida/contracts";
import { webChatRoutes } from "./web-chat.routes";
import { DEFAULT_WEB_CHANNEL } from "./web-chat.normalizer";
import { webEnvSchema, type WebEnv } from "./web.env";
import { WebSender } from "./web.sender";

/**
 * The built-in web chat: its page and WebSocket are served by every gateway replica (no
 * ingress service of its own), its sends are published through Redis to the replica that
 * holds the visitor's socket.
 */
export const webChannel: ChannelModule<WebEnv> = {
  kind: "web",
  defaultInstance: DEFAULT_WEB_CHANNEL,
  envSchema: webEnvSchema,
  requiredVariable: "SECRET",

  validate(instances, variable) {
    const issues: ChannelConfigIssue[] = [];
    const byPath = new Map<string, ChannelInstance<WebEnv>>();
    for (const instance of instances) {
      const taken = [...byPath.entries()].find(([p]) => p === instance.config.PATH || p.startsWith(`${instance.config.PATH}/`) || instance.config.PATH.startsWith(`${p}/`));
      if (taken) issues.push({ variable: variable(instance, "PATH"), message: `${instance.config.PATH} overlaps ${variable(taken[1], "PATH")} (${taken[0]}); each web chat needs a path of its own` });
      else byPath.set(instance.config.PATH, instance);
    }
    return issues;
  },

  createSender(instance, deps) {
    return new WebSender({ channel: instance.name, redis: deps.redis, prefix: deps.prefix, clock: systemClock });
  },

  gatewayRoutes(instance, deps) {
    return { plugin: webChatRoutes({ channel: instance.name, config: instance.config, deps, clock: systemClock }), path: instance.config.PATH };
  },
};
