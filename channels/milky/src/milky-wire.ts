import { z } from "zod";
import {
  FriendEntity,
  GroupEntity,
  GroupMemberEntity,
  IncomingFaceSegmentData,
  IncomingFileSegmentData,
  IncomingForwardSegmentData,
  IncomingFriendMessage,
  IncomingImageSegmentData,
  IncomingLightAppSegmentData,
  IncomingMarketFaceSegmentData,
  IncomingMentionSegmentData,
  IncomingRecordSegmentData,
  IncomingReplySegmentData,
  IncomingTextSegmentData,
  IncomingVideoSegmentData,
  SendGroupMessageOutput,
  UploadGroupFileOutput,
  zUin,
} from "@saltify/milky-types";

/**
 * The parts of Milky's wire format the ingress reads, built from the protocol's own zod
 * schemas (`@saltify/milky-types`) but lenient the way the protocol's compatibility rules
 * ask: an implementation older than the schemas omits newer fields, so only the fields a
 * message cannot exist without are required; every other field is taken when it is valid
 * and dropped (not fatal) when it is missing or malformed.
 */

type Shape = z.core.$ZodLooseShape;

/** The named fields of a protocol object schema, each optional and dropped when malformed. */
function lenientPick<S extends z.ZodObject, K extends keyof S["shape"] & string>(schema: S, keys: readonly K[]) {
  const shape: Shape = {};
  for (const key of keys) shape[key] = (schema.shape[key] as z.ZodType).optional().catch(undefined);
  return z.looseObject(shape as { [P in K]: z.ZodCatch<z.ZodOptional<S["shape"][P]>> });
}

/** The named fields of a protocol object schema, required and strict. */
function strictPick<S extends z.ZodObject, K extends keyof S["shape"] & string>(schema: S, keys: readonly K[]) {
  const shape: Shape = {};
  for (const key of keys) shape[key] = schema.shape[key] as z.ZodType;
  return z.looseObject(shape as { [P in K]: S["shape"][P] });
}

/** The event envelope every transport carries (`{time, self_id, event_type, data}`). */
export const MilkyEventEnvelope = z.looseObject({
  event_type: z.string().min(1),
  self_id: zUin,
  time: z.number().int().nonnegative().optional().catch(undefined),
  data: z.unknown(),
});

/**
 * `message_receive` data without its entities and segments: what every scene has. The
 * scene is a string here so that a scene newer than these schemas is ignored by name.
 */
export const MilkyIncomingMessageCore = strictPick(IncomingFriendMessage, ["peer_id", "message_seq", "sender_id", "time"]).extend({
  message_scene: z.string(),
  segments: z.array(z.unknown()),
});

/**
 * What a send or an upload answers. `status:"ok"` is the acceptance; the fields are read
 * when present (an implementation older than the schemas answers `message_seq` without
 * `time`, or nothing at all), so an accepted message is never taken for a failed one and sent again.
 */
export const MilkySendAnswer = lenientPick(SendGroupMessageOutput, ["message_seq"]);
export const MilkyUploadAnswer = lenientPick(UploadGroupFileOutput, ["file_id"]);

export const MilkyFriend = lenientPick(FriendEntity, ["nickname", "remark"]);
export const MilkyGroup = lenientPick(GroupEntity, ["group_name"]);
export const MilkyGroupMember = lenientPick(GroupMemberEntity, ["nickname", "card", "role"]);

/** `{type, data}`; the data is read by the segment's own schema. */
export const MilkySegmentEnvelope = z.looseObject({ type: z.string(), data: z.unknown() });

/** Each known incoming segment's data: the fields it cannot do without are strict, the rest lenient. */
export const MilkySegmentData = {
  text: strictPick(IncomingTextSegmentData, ["text"]),
  mention: strictPick(IncomingMentionSegmentData, ["user_id"]).extend(lenientPick(IncomingMentionSegmentData, ["name"]).shape),
  mention_all: z.looseObject({}),
  face: lenientPick(IncomingFaceSegmentData, ["face_id"]),
  reply: strictPick(IncomingReplySegmentData, ["message_seq"]).extend(lenientPick(IncomingReplySegmentData, ["sender_id"]).shape),
  image: strictPick(IncomingImageSegmentData, ["resource_id"]).extend(lenientPick(IncomingImageSegmentData, ["summary", "sub_type"]).shape),
  record: strictPick(IncomingRecordSegmentData, ["resource_id"]),
  video: strictPick(IncomingVideoSegmentData, ["resource_id"]),
  file: strictPick(IncomingFileSegmentData, ["file_id"]).extend(lenientPick(IncomingFileSegmentData, ["file_name"]).shape),
  forward: lenientPick(IncomingForwardSegmentData, ["title", "summary"]),
  market_face: lenientPick(IncomingMarketFaceSegmentData, ["summary"]),
  light_app: lenientPick(IncomingLightAppSegmentData, ["app_name"]),
  xml: z.looseObject({}),
} as const;
export type MilkySegmentType = keyof typeof MilkySegmentData;

export function isMilkySegmentType(type: string): type is MilkySegmentType {
  return Object.hasOwn(MilkySegmentData, type);
}
