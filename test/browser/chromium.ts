import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { repoRoot } from '../helpers/cli.js';

/** Debian's chromium package; playwright-core drives it and downloads no browser of its own. */
export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export const chromiumMissing: string | null = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} is absent: install Debian's chromium package (apt-get install chromium; .ci/run does) to run the web inbox browser tests`;

/** Where every run saves its page screenshots (gitignored; the README names it). */
export const SCREENSHOT_DIR = path.join(repoRoot, 'test-output', 'screenshots');

export interface Browser {
  page: Page;
  context: BrowserContext;
  /** Save a full-page screenshot as test-output/screenshots/<name>.png. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile, no network beyond what the page asks for. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    page,
    context,
    shot: async (name) => {
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
    },
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
