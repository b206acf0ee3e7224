import { readFile, stat } from "node:fs/promises";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import { zUin } from "@saltify/milky-types";
import type { Attachment, ChatAddress, OutboundMessage } from "@nahida/contracts";
import { resolveWorkspacePath } from "@nahida/workspace";
import { ChannelSendError, type ChannelSender, type SendProgress } from "@nahida/channels";
import { MilkyApiClient, MilkyApiError } from "./milky-api.client";
import { renderMilkyChunks } from "./milky-text";
import { MilkySendAnswer, MilkyUploadAnswer } from "./milky-wire";
import { DEFAULT_MILKY_CHANNEL } from "./milky.normalizer";

export interface MilkySenderOptions {
  baseUrl: string;
  accessToken?: string;
  /** The instance name: the ChatAddress channel this sender is registered for. Default `milky`. */
  channel?: string;
  /** Attachments given as paths are resolved inside this directory. */
  workspaceDir?: string;
  /**
   * How a workspace file reaches the implementation: `base64` inlines it (works wherever the
   * implementation runs), `file` passes a `file://` URI (the implementation must see the
   * same filesystem; no size limit). Default `base64`.
   */
  localFiles?: "base64" | "file";
  /** What a send waits before trying again while the account is logged out or the token refused. Default 30 s. */
  loggedOutRetrySeconds?: number;
}

/** Inlining a bigger file as base64 would make a request of over 30 MB; send it as `file://` instead. */
const MAX_BASE64_FILE_BYTES = 20 * 1024 * 1024;

/** The recorded id of a part accepted (`status:"ok"`) by an implementation that answered no seq or file id. */
const UNKNOWN_ID = "unknown";

type Segment = { type: string; data: Record<string, unknown> };
type Peer = { scene: "friend" | "group"; id: number };

/** One message or one upload: what one part of a delivery is. */
type Part = { kind: "message"; segments: Segment[] } | { kind: "upload"; attachment: Attachment };

/**
 * Milky (QQ) sender. The answer's Markdown becomes plain text in chunks under QQ's limit; the
 * first message carries the reply segment, the last text message carries the photos, so a
 * short answer with a picture is one QQ message. Voice and video go out as messages of their
 * own (QQ shows them alone), documents through `upload_private_file` / `upload_group_file`.
 * Failures keep the protocol's retcode and message and never the token.
 */
export class MilkySender implements ChannelSender {
  readonly channel: string;
  private readonly api: MilkyApiClient;

  constructor(private readonly o: MilkySenderOptions) {
    this.channel = o.channel ?? DEFAULT_MILKY_CHANNEL;
    this.api = new MilkyApiClient({ baseUrl: o.baseUrl, ...(o.accessToken ? { accessToken: o.accessToken } : {}) });
  }

  async send(target: ChatAddress, message: OutboundMessage, progress: SendProgress): Promise<void> {
    const peer = peerOf(target);
    // Every file is read before the first part goes out: a bad path must not leave the chat
    // with half a message.
    const uris = new Map<Attachment, string>();
    for (const attachment of message.attachments) uris.set(attachment, await this.uriFor(attachment));
    const parts = partsOf(message, uris);
    for (let index = progress.sentParts; index < parts.length; index++) {
      let id: string;
      try {
        id = await this.sendPart(peer, parts[index]!, uris);
      } catch (error) {
        throw this.classify(error);
      }
      await progress.recordPart(index, id, index === parts.length - 1);
    }
  }

  private async sendPart(peer: Peer, part: Part, uris: Map<Attachment, string>): Promise<string> {
    if (part.kind === "message") {
      const body = peer.scene === "group" ? { group_id: peer.id, message: part.segments } : { user_id: peer.id, message: part.segments };
      const api = peer.scene === "group" ? "send_group_message" : "send_private_message";
      return String((await this.api.call(api, body, MilkySendAnswer)).message_seq ?? UNKNOWN_ID);
    }
    const { attachment } = part;
    const fileName = attachment.filename ?? (attachment.path ? basename(attachment.path) : attachment.url ? basename(new URL(attachment.url).pathname) || "file" : "file");
    const file = { file_uri: uris.get(attachment)!, file_name: fileName };
    const output =
      peer.scene === "group"
        ? await this.api.call("upload_group_file", { group_id: peer.id, ...file }, MilkyUploadAnswer)
        : await this.api.call("upload_private_file", { user_id: peer.id, ...file }, MilkyUploadAnswer);
    // An upload answers with a file id, not a message seq; the prefix keeps the two apart.
    return `file:${output.file_id ?? UNKNOWN_ID}`;
  }

  /** Maps a failure onto the delivery's retry classes; see the README's "Connect QQ through Milky". */
  private classify(error: unknown): ChannelSendError {
    if (error instanceof ChannelSendError) return error;
    if (!(error instanceof MilkyApiError)) return new ChannelSendError("transient", (error as Error)?.message ?? String(error), {}, { cause: error });
    const f = error.failure;
    const loggedOut = { retry_after: this.o.loggedOutRetrySeconds ?? 30, unavailable: true };
    switch (f.kind) {
      case "http":
        if (f.status === 429) return new ChannelSendError("rate_limited", error.message, { error_code: 429, retry_after: f.retryAfterSeconds ?? 1 }, { cause: error });
        // The operator fixes the token and the implementation reloads it: wait, do not drop the answer.
        if (f.status === 401) return new ChannelSendError("transient", `${error.message}; check MILKY_ACCESS_TOKEN`, { error_code: 401, ...loggedOut }, { cause: error });
        if (f.status >= 500) return new ChannelSendError("transient", error.message, { error_code: f.status }, { cause: error });
        return new ChannelSendError("permanent", error.message, { error_code: f.status }, { cause: error });
      case "retcode":
        if (f.retcode === -403) {
          return new ChannelSendError("transient", `the QQ account is not logged in at the Milky implementation (retcode -403: ${f.message})`, { error_code: -403, ...loggedOut }, { cause: error });
        }
        // -400 (bad parameters) and the implementation's own codes (no such friend or group,
        // muted): sending the same again gets the same answer.
        return new ChannelSendError("permanent", f.message === "" ? error.message : f.message, { error_code: f.retcode }, { cause: error });
      case "network":
        return new ChannelSendError("transient", error.message, f.sent ? { outcome_unknown: true } : {}, { cause: error });
      case "malformed":
        // A 200 came back: the message may have gone out.
        return new ChannelSendError("transient", error.message, { outcome_unknown: true }, { cause: error });
      default: {
        const unreachable: never = f;
        throw new Error(`unknown failure ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private async uriFor(attachment: Attachment): Promise<string> {
    if (attachment.url) return attachment.url;
    if (attachment.fileId) throw new ChannelSendError("permanent", "Milky sends files by URI; a QQ resource or file id cannot be sent again");
    if (!attachment.path) throw new ChannelSendError("permanent", "attachment has no path, url or fileId");
    if (!this.o.workspaceDir) throw new ChannelSendError("permanent", "attachment paths need NAHIDA_WORKSPACE_DIR");
    const resolved = await resolveWorkspacePath(this.o.workspaceDir, attachment.path);
    if (!resolved.ok) throw new ChannelSendError("permanent", resolved.error.message);
    if (this.o.localFiles === "file" || (await stat(resolved.value)).size > MAX_BASE64_FILE_BYTES) return pathToFileURL(resolved.value).href;
    return `base64://${(await readFile(resolved.value)).toString("base64")}`;
  }
}

function peerOf(target: ChatAddress): Peer {
  if (target.type === "channel") throw new ChannelSendError("permanent", `QQ has no channel chats; address ${target.channel}:private:<user_id> or ${target.channel}:group:<group_id>`);
  if (target.thread !== undefined) throw new ChannelSendError("permanent", "QQ chats have no threads");
  const id = zUin.safeParse(/^\d+$/.test(target.id) ? Number(target.id) : Number.NaN);
  if (!id.success) throw new ChannelSendError("permanent", `${JSON.stringify(target.id)} is not a QQ ${target.type === "group" ? "group number" : "number"}`);
  return { scene: target.type === "group" ? "group" : "friend", id: id.data };
}

/** The message's parts, the same every time for the same message (a resumed send relies on it). */
function partsOf(message: OutboundMessage, uris: Map<Attachment, string>): Part[] {
  const chunks = message.text.trim() ? renderMilkyChunks(message.text) : [];
  const photos = message.attachments.filter((a) => a.type === "photo");
  const messages: Segment[][] = chunks.map((text) => [{ type: "text", data: { text } }]);
  const photoSegments = photos.flatMap((a): Segment[] => [
    { type: "image", data: { uri: uris.get(a)!, sub_type: "normal" } },
    ...(a.caption ? [{ type: "text", data: { text: a.caption } }] : []),
  ]);
  if (photoSegments.length > 0) {
    if (messages.length === 0) messages.push(photoSegments);
    else messages[messages.length - 1]!.push(...photoSegments);
  }
  for (const a of message.attachments) {
    if (a.type === "audio") messages.push([{ type: "record", data: { uri: uris.get(a)! } }]);
    if (a.type === "video") messages.push([{ type: "video", data: { uri: uris.get(a)! } }]);
  }
  const replySeq = message.replyTo !== undefined && /^\d{1,15}$/.test(message.replyTo) ? Number(message.replyTo) : undefined;
  if (replySeq !== undefined && messages.length > 0) messages[0]!.unshift({ type: "reply", data: { message_seq: replySeq } });
  return [
    ...messages.map((segments): Part => ({ kind: "message", segments })),
    ...message.attachments.filter((a) => a.type === "document").map((attachment): Part => ({ kind: "upload", attachment })),
  ];
}
