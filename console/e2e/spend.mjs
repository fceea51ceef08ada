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
// Environment: CONSOLE_URL, VIEWER_KEY, BUDGET_TEAM, CHROMIUM.
import { env, step, until, run, atWidth, noSideScroll, shot, PHONE } from "./lib.mjs";
import assert from "node:assert/strict";

const base = env("CONSOLE_URL");
const team = env("BUDGET_TEAM");
const titlesOf = (page, sel) => page.$$eval(sel, (ts) => ts.map((t) => t.textContent));

// 400, 401: the probes the test sends on purpose.
await run(async ({ page }) => {
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
  await shot(page, "console-spend.png");

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
  await atWidth(page, PHONE);
  await page.goto(base + "/console/spend?days=90");
  await page.waitForSelector("#spend-chart");
  await noSideScroll(page, "the spend page (90 days)");
  // A chart keeps a readable width and scrolls in its own box.
  const box = await page.$eval("#spend-chart .scroll", (d) => [d.getBoundingClientRect().right, getComputedStyle(d).overflowX]);
  assert.ok(box[0] <= 390 && box[1] === "auto", `the spend chart's box: ${box}`);
  await shot(page, "console-spend-phone.png");

}, { allow: /400|401|Unauthorized|Bad Request/ });
