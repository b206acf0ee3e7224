import { existsSync } from "node:fs";
import { copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { REPO_ROOT } from "./processes";

/** Debian's Chromium; `.ci/run` installs it when it is missing. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Headless Chromium with the flags that keep it from dialling hosts this machine cannot
 * reach (../shared/notes/environment.md); Playwright gives it a fresh profile of its own.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/** Every run takes the page's screenshot (so taking it is tested); UPDATE_SCREENSHOTS=1 puts it in docs/. */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  const shot = join(await mkdtemp(join(tmpdir(), "nahida-shots-")), `${name}.png`);
  await page.screenshot({ path: shot, fullPage: options.fullPage ?? false });
  if (process.env.UPDATE_SCREENSHOTS === "1") await copyFile(shot, join(REPO_ROOT, "docs", `${name}.png`));
}
