export * from "./sdk-version";
export * from "./manifest";
export * from "./plugin";
export * from "./tool";
export * from "./command";
export type {
  ChannelConfigIssue,
  ChannelIngressDeps,
  ChannelInstance,
  ChannelModule,
  ChannelSender,
  ChannelSenderDeps,
  RunningChannelIngress,
} from "@nahida/channels";
export { ChannelStartError } from "@nahida/channels";
export * from "./send-check";
