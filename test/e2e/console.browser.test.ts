import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, screenshot as takeScreenshot, type TestBrowser } from "../support/browser";
import { waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";
import { TEST_WEB_SECRET, echoModel, visitorToken } from "../support/web-chat";

const ADMIN = "console-admin-token-0123456789abcdef";

const screenshot = (page: Page, name: string) => takeScreenshot(page, name, { fullPage: true });

async function signIn(browser: Browser, base: string, token: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${base}/console`);
  await page.fill('input[name="token"]', token);
  await page.click('form.sign-in button[type="submit"]');
  await page.waitForSelector("nav .who");
  return { context, page };
}

describe("the operators' console in a browser", () => {
  let h: Harness;
  let b: TestBrowser;
  let base: string;
  let console: Page;

  beforeAll(async () => {
    h = await startHarness("console-browser", { WEB_SECRET: TEST_WEB_SECRET, NAHIDA_API_TOKEN: ADMIN, SCHEDULER_MIN_INTERVAL_MS: "1000" });
    echoModel(h.openai);
    base = h.nahida.gatewayAddress!;
    b = await launchBrowser();
    console = (await signIn(b.browser, base, ADMIN)).page;
  });
  afterAll(async () => {
    await b?.close();
    await h?.close();
  });

  it("finds a visitor's session, shows the conversation, and writes into the visitor's page", async () => {
    const visitor = await b.browser.newPage();
    await visitor.goto(`${base}/chat#token=${await visitorToken("nora", { name: "Nora" })}`);
    await visitor.waitForSelector('.status[data-state="online"]');
    await visitor.fill(".composer textarea", "Is anyone there?");
    await visitor.press(".composer textarea", "Enter");
    await visitor.locator(".message.bot", { hasText: "echo: Is anyone there?" }).waitFor();

    await console.goto(`${base}/console#/sessions`);
    await console.fill('input[name="chat"]', "nora");
    await console.press('input[name="chat"]', "Enter");
    const found = console.locator("table.sessions a", { hasText: "web:private:nora" });
    await found.waitFor();
    await screenshot(console, "console-sessions");
    await found.click();
    await console.locator(".conversation .turn.assistant", { hasText: "echo: Is anyone there?" }).waitFor();
    expect(await console.locator(".conversation .turn.user .turn-head").first().innerText()).toContain("web/private · Nora");
    await screenshot(console, "console-session");

    await console.fill('form.send textarea[name="text"]', "Hello Nora, this is **the operator**.");
    await console.click('form.send button[type="submit"]');
    await console.locator(".banner.ok", { hasText: "Queued as delivery" }).waitFor();
    const arrived = visitor.locator(".message.bot", { hasText: "Hello Nora, this is the operator." });
    await arrived.waitFor({ timeout: 10_000 });
    expect(await arrived.locator("strong").innerText()).toBe("the operator");
    await visitor.close();
  });

  it("retries a failed delivery from the list of failed ones", async () => {
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: "730000001" });
    const sent = await fetch(`${base}/api/send`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ target: "telegram:private:730000001", text: "retry me" }) });
    const { delivery_id } = (await sent.json()) as { delivery_id: string };
    await waitFor(async () => (await deliveryStatus(delivery_id)) === "failed", 15_000, "the delivery to fail");

    await console.goto(`${base}/console#/deliveries`);
    const retry = console.locator(`table.failed button[data-delivery="${delivery_id}"]`);
    await screenshot(console, "console-deliveries");
    await retry.click();
    await console.locator(".banner.ok", { hasText: "queued again" }).waitFor();
    await waitFor(async () => (await deliveryStatus(delivery_id)) === "sent", 15_000, "the retried delivery to be sent");
    // The fake records the refused call too: one refusal, then the retry it accepted.
    expect(h.telegram.sent("730000001").map((c) => c.params.text)).toEqual(["retry me", "retry me"]);
  });

  it("creates a cron job and shows its first fire in the job's history", async () => {
    await console.goto(`${base}/console#/cron`);
    await console.fill('input[name="name"]', "Heartbeat to Nora");
    await console.fill('input[name="target"]', "web:private:nora");
    await console.selectOption('select[name="kind"]', "every");
    await console.fill('input[name="when"]', "2");
    await console.fill('textarea[name="text"]', "still here");
    await console.click('form.grid button[type="submit"]');
    await console.locator(".banner.ok", { hasText: "Created Heartbeat to Nora" }).waitFor();
    const row = console.locator("table.cron tr", { hasText: "Heartbeat to Nora" });
    await waitFor(
      async () => {
        await row.locator("button", { hasText: "History" }).click();
        return (await row.locator("table.runs td", { hasText: "succeeded" }).count()) > 0;
      },
      20_000,
      "the job's first fire in its history",
      500,
    );
    await screenshot(console, "console-cron");
    await row.locator("button", { hasText: "Pause" }).click();
    await console.locator("table.cron tr", { hasText: "Heartbeat to Nora" }).locator(".badge", { hasText: "paused" }).waitFor();
  });

  it("shows the send policy, the tokens and the health of every role", async () => {
    await console.goto(`${base}/console#/policy`);
    await console.waitForSelector('textarea[name="policy"]');
    expect(JSON.parse(await console.inputValue('textarea[name="policy"]'))).toEqual({ default: "allow", rules: [] });
    await screenshot(console, "console-policy");
    await console.goto(`${base}/console#/tokens`);
    await console.locator("td", { hasText: "NAHIDA_API_TOKEN" }).first().waitFor();
    await screenshot(console, "console-tokens");
    await console.goto(`${base}/console#/health`);
    await console.locator("table.roles td", { hasText: "agent-worker" }).waitFor();
    expect(await console.locator("table.checks").innerText()).toContain("postgres");
    await screenshot(console, "console-health");
  });

  it("refuses a wrong token, and shows a read-only token only what it may do", async () => {
    const wrong = await b.browser.newPage();
    await wrong.goto(`${base}/console`);
    await wrong.fill('input[name="token"]', "not-a-real-token-at-all-000");
    await wrong.click('form.sign-in button[type="submit"]');
    await wrong.locator(".banner.bad", { hasText: "not valid" }).waitFor();
    await wrong.close();

    const created = await fetch(`${base}/api/tokens`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "viewer", scopes: ["read"] }) });
    const reader = await signIn(b.browser, base, ((await created.json()) as { token: string }).token);
    expect(await reader.page.locator("nav a[data-route]").allInnerTexts()).toEqual(["Sessions", "Deliveries", "Cron", "Health"]);
    await reader.page.goto(`${base}/console#/cron`);
    await reader.page.locator("table.cron").waitFor();
    expect(await reader.page.locator("button", { hasText: "Run now" }).count()).toBe(0);
    await reader.context.close();
  });

  async function deliveryStatus(id: string): Promise<string> {
    const res = await fetch(`${base}/api/deliveries/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return ((await res.json()) as { status: string }).status;
  }
});
