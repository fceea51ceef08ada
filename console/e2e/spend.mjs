// Browser test of the console's Spend page, run by
// gateway/console_spend_browser_test.go (TestConsoleSpendInBrowser)
// against a gateway in front of the simulator with a store and steady
// traffic. A visitor is sent to the login; a viewer opens the page from
// the nav; the charts have axes with units and hover values (<title>);
// the budget of the store's team is charted against its limit; the
// selectors change the range and the groupings; at desktop and at 390 px
// the page does not scroll sideways. Every wait is Playwright's or a
// polled condition with a deadline, never a sleep.
//
// Environment: CONSOLE_URL, VIEWER_KEY, BUDGET_TEAM, SHOT_DIR, CHROMIUM.
import { chromium } from "playwright-core";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const base = env("CONSOLE_URL");
const team = env("BUDGET_TEAM");
const shots = env("SHOT_DIR");
const WAIT = 25000; // generous: a busy 2-core machine

const step = (s) => console.log(`step: ${s}`);
async function until(what, f, deadline = WAIT) {
  const end = Date.now() + deadline;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 250)); // polling a condition, with a deadline
  }
}
async function noSideScroll(page, what) {
  const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(sw <= cw, `${what} scrolls sideways at ${cw}px: ${sw}px wide`);
}
const titlesOf = (page, sel) => page.$$eval(sel, (ts) => ts.map((t) => t.textContent));

const profile = await mkdtemp(join(tmpdir(), "switchover-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env("CHROMIUM"),
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1500, height: 1000 },
});
context.setDefaultTimeout(WAIT);
const errors = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error" && !/400|401|Unauthorized|Bad Request/.test(m.text())) errors.push(m.text()); });

  step("a visitor is sent to the login from the spend page");
  await page.goto(base + "/console/spend");
  assert.equal(new URL(page.url()).pathname, "/console/login");

  step("a viewer signs in and opens Spend from the nav");
  await page.fill("#key", env("VIEWER_KEY"));
  await Promise.all([page.waitForURL(base + "/console/"), page.click("form#login button[type=submit]")]);
  await Promise.all([page.waitForURL(/\/console\/spend$/), page.click('nav a[href="/console/spend"]')]);
  await page.waitForSelector("form#spend-filter");

  step("the traffic charts fill as the usage writer stores requests");
  // The usage writer stores requests a moment after they end.
  await until("bars in the requests chart", async () => {
    await page.reload();
    return (await page.locator("#requests-chart rect.bar").count()) > 0 && (await page.locator("#spend-chart rect.bar").count()) > 0;
  });
  const reqTitles = await titlesOf(page, "#requests-chart rect.bar title");
  assert.ok(reqTitles.some((t) => /^\d{4}-\d\d-\d\d · (uksouth|swedencentral|westeurope): \d+ req$/.test(t)), `requests' hover values: ${reqTitles}`);
  const spendTitles = await titlesOf(page, "#spend-chart rect.bar title");
  assert.ok(spendTitles.every((t) => /: \$[\d.e-]+$/.test(t)), `spend's hover values: ${spendTitles}`);
  const yTicks = await page.$$eval("#spend-chart text.tick[text-anchor=end]", (ts) => ts.map((t) => t.textContent));
  assert.ok(yTicks.length >= 2 && yTicks[0] === "$0", `spend's y axis: ${yTicks}`);
  assert.ok((await page.locator("#p95-chart circle.dot").count()) > 0, "no p95 points");
  assert.ok((await titlesOf(page, "#p95-chart circle.dot title")).every((t) => / ms$/.test(t)), "p95 values without ms");

  step(`team ${team}'s budget is charted against its limit`);
  const burn = page.locator(`section.burn[data-owner="team"][data-name="${team}"]`);
  await burn.waitFor();
  assert.match(await burn.locator("h3").textContent(), /of \$50\.00 this month/);
  assert.ok((await burn.locator("polyline.limit").count()) === 1, "no limit line");
  await page.screenshot({ path: join(shots, "console-spend.png"), fullPage: true });

  step("the selectors change the range and the groupings");
  await page.selectOption('select[name="days"]', "7");
  await page.selectOption('select[name="by"]', "backend");
  await page.selectOption('select[name="traffic"]', "pool");
  await Promise.all([page.waitForURL(/days=7&by=backend&traffic=pool/), page.click("#spend-filter button[type=submit]")]);
  assert.equal((await page.locator("#spend-chart text.tick[text-anchor=middle]").count()), 7, "7 days on the x axis");
  const poolTitles = await titlesOf(page, "#requests-chart rect.bar title");
  assert.ok(poolTitles.some((t) => / · (chat-prod|batch): \d+ req$/.test(t)), `requests by pool: ${poolTitles}`);
  await noSideScroll(page, "the spend page");

  step("at a phone's width the page does not scroll sideways");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(base + "/console/spend?days=90");
  await page.waitForSelector("#spend-chart");
  await noSideScroll(page, "the spend page (90 days)");
  // A chart keeps a readable width and scrolls in its own box.
  const box = await page.$eval("#spend-chart .scroll", (d) => [d.getBoundingClientRect().right, getComputedStyle(d).overflowX]);
  assert.ok(box[0] <= 390 && box[1] === "auto", `the spend chart's box: ${box}`);
  await page.screenshot({ path: join(shots, "console-spend-phone.png"), fullPage: true });

  assert.deepEqual(errors, [], "errors in the page");
  console.log("ok: every browser check passed");
} finally {
  await context.close();
  await rm(profile, { recursive: true, force: true });
}
