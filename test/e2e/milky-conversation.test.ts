import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeMilky, type FakeMilky, type FakeMilkySent } from "../fakes/milky.fake";
import { apiClient } from "../gateway/api-client";
import { waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";

const TOKEN = "milky-e2e-access-token";
const ADMIN = "test-admin-token-milky-e2e-0123";
const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/milky/", import.meta.url));
const fixture = (name: string) => JSON.parse(readFileSync(`${FIXTURES_DIR}${name}.json`, "utf8")) as Record<string, any>;
/** A 1×1 transparent PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");
const settle = (ms = 800) => new Promise((r) => setTimeout(r, ms));
const textOf = (s: FakeMilkySent | undefined) => (s?.segments ?? []).filter((x) => x.type === "text").map((x) => String(x.data.text)).join("");

/** A group message in 运维值班群 from 阿强 with the given segments and a fresh seq. */
let nextSeq = 90_000;
function groupMessage(segments: unknown[]) {
  const base = fixture("group-mention-reply-image");
  return { ...base, data: { ...base.data, message_seq: ++nextSeq, segments } };
}

describe.each(["websocket", "sse"] as const)("Milky conversation end to end (%s)", (transport) => {
  let milky: FakeMilky;
  let h: Harness;
  let admin: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    milky = await startFakeMilky({ accessToken: TOKEN });
    h = await startHarness(`e2e_milky_${transport}`, { MILKY_BASE_URL: milky.baseUrl, MILKY_ACCESS_TOKEN: TOKEN, MILKY_EVENT_TRANSPORT: transport, NAHIDA_API_TOKEN: ADMIN });
    admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
    await waitFor(async () => milky.eventClients()[transport] === 1, 10_000, "the event connection");
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await milky?.close();
  });

  it("answers a friend message in the friend chat, once even when the event is delivered twice", async () => {
    h.openai.enqueue({ content: "早上好！今天 10 点有站会。" });
    const event = fixture("friend-text");
    await milky.pushEvent(event);
    // A reconnect replay: the same (self_id, scene, peer_id, message_seq).
    await milky.pushEvent(event);
    const [answer] = await milky.waitForSent(10001, 1, 15_000);
    expect(answer).toMatchObject({ api: "send_private_message", scene: "friend", peerId: 10001 });
    expect(answer!.segments).toEqual([{ type: "text", data: { text: "早上好！今天 10 点有站会。" } }]);
    const user = h.openai.requests.at(-1)!.body.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(user).toEqual(["[2026-05-10 16:03 +08 | milky/private | 小明]\n早上好，今天有什么安排？"]);
    await settle();
    expect(milky.sent(10001)).toHaveLength(1);
    expect(h.openai.requests).toHaveLength(1);
  });

  it("answers a group mention with a reply and an image in the group, replying to it, the image offered to the agent", async () => {
    h.openai.enqueue({ content: "这是**磁盘已满**的错误。" });
    await milky.pushEvent(fixture("group-mention-reply-image"));
    const [answer] = await milky.waitForSent(20001, 1, 15_000);
    expect(answer).toMatchObject({ api: "send_group_message", peerId: 20001 });
    expect(answer!.segments).toEqual([
      { type: "reply", data: { message_seq: 88231 } },
      { type: "text", data: { text: "这是磁盘已满的错误。" } },
    ]);
    const user = h.openai.requests.at(-1)!.body.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(user.at(-1)).toBe("[2026-05-10 16:04 +08 | milky/group | 强哥 (阿强) admin]\n这张图里的错误是什么意思？\n[photo]");
  });

  it("does not run the model for an unaddressed group message", async () => {
    const before = h.openai.requests.length;
    await milky.pushEvent(groupMessage([{ type: "text", data: { text: "大家中午吃什么" } }]));
    await settle(1_500);
    expect(h.openai.requests.length).toBe(before);
    expect(milky.sent(20001)).toHaveLength(1);
  });

  it("sends POST /api/send text and a photo to a group as one message with segments", async () => {
    await mkdir(join(h.workspaceDir, "img"), { recursive: true });
    await writeFile(join(h.workspaceDir, "img", "chart.png"), PNG);
    const res = await admin("POST", "/api/send", { target: "milky:group:20002", text: "部署**完成**", attachments: [{ type: "photo", path: "img/chart.png" }] });
    expect(res.status).toBe(202);
    const delivered = await waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${res.body.delivery_id}`);
      return d.body.status === "sent" ? d.body : undefined;
    }, 15_000, "the delivery to be sent");
    const [message, ...rest] = milky.sent(20002);
    expect(rest).toEqual([]);
    expect(message!.segments).toEqual([
      { type: "text", data: { text: "部署完成" } },
      { type: "image", data: { uri: `base64://${PNG.toString("base64")}`, sub_type: "normal" } },
    ]);
    expect(JSON.stringify(delivered)).toContain(message!.id);
  });

  it("splits a long answer, and fails a delivery the implementation refuses with -400 with the protocol's message", async () => {
    const long = Array.from({ length: 300 }, (_, i) => `第 ${i} 条：一段足够长的说明文字。`).join("\n");
    const split = await admin("POST", "/api/send", { target: "milky:private:10005", text: long });
    await waitFor(async () => (await admin("GET", `/api/deliveries/${split.body.delivery_id}`)).body.status === "sent", 15_000, "the long delivery");
    expect(milky.sent(10005).length).toBeGreaterThan(1);
    expect(milky.sent(10005).map(textOf).join("\n")).toBe(long);

    milky.failNext("send_group_message", { retcode: -400, message: "group_id 对应的群不存在" }, { peerId: 20404 });
    const refused = await admin("POST", "/api/send", { target: "milky:group:20404", text: "hello" });
    const failed = await waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${refused.body.delivery_id}`);
      return d.body.status === "failed" ? d.body : undefined;
    }, 15_000, "the refused delivery to fail");
    expect(JSON.stringify(failed)).toContain("group_id 对应的群不存在");
    expect(JSON.stringify(failed)).not.toContain(TOKEN);
  });

  it("refuses the legacy untyped address with the expected form", async () => {
    const res = await admin("POST", "/api/send", { target: "milky:10001", text: "x" });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("milky:10001");
    expect(res.body.error.message).toContain("<channel>:<type>:<id>");
  });
});
