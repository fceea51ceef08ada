// Browser test of the console's request log, run by
// gateway/console_browser_test.go (TestConsoleRequestsInBrowser) against
// a gateway in front of the simulator with a store. A fault in the
// simulator opens a backend's breaker; from its event the page links to
// the requests that tried that backend; one of them opens as a timeline
// of its attempts; the filter form narrows the list; at a phone's width
// nothing but the tables' own boxes scrolls sideways; a viewer sees no
// end users. Every wait is Playwright's or a polled condition with a
// deadline, never a sleep.
//
// Environment: CONSOLE_URL, ADMIN_KEY, VIEWER_KEY, SIM_URL,
// FAULT_BACKEND, SHOT_DIR, CHROMIUM.
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
const sim = env("SIM_URL");
const faulty = env("FAULT_BACKEND");
const shots = env("SHOT_DIR");
const WAIT = 25000; // generous: a busy 2-core machine

const step = (s) => console.log(`step: ${s}`);
async function setFault(name, fault) {
  const r = await fetch(`${sim}/_sim/deployments/${name}/fault`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(fault),
  });
  assert.equal(r.status, 200, `fault ${JSON.stringify(fault)} on ${name}: ${await r.text()}`);
}
async function until(what, f, deadline = WAIT) {
  const end = Date.now() + deadline;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 250)); // polling a condition, with a deadline
  }
}
// noSideScroll: the page itself does not scroll sideways.
async function noSideScroll(page, what) {
  const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(sw <= cw, `${what} scrolls sideways at ${cw}px: ${sw}px wide`);
}
async function signIn(page, key) {
  await page.goto(base + "/console/login");
  await page.fill("#key", key);
  await Promise.all([page.waitForURL(base + "/console/"), page.click("form#login button[type=submit]")]);
}

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
  // 400: the bad filter the test sends on purpose; 401, 403, 404: probes.
  page.on("console", (m) => { if (m.type() === "error" && !/400|401|403|404|Unauthorized|Forbidden|Bad Request/.test(m.text())) errors.push(m.text()); });

  step("a visitor is sent to the login from the request log");
  for (const p of ["/console/requests", "/console/requests/anything"]) {
    await page.goto(base + p);
    assert.equal(new URL(page.url()).pathname, "/console/login", `${p} did not lead to the login`);
  }

  step("the admin signs in; the nav links to Requests");
  await signIn(page, env("ADMIN_KEY"));
  await Promise.all([page.waitForURL(/\/console\/requests$/), page.click('nav a[href="/console/requests"]')]);
  await page.waitForSelector("form#request-filter");

  step(`a fault opens ${faulty}'s breaker; its event links to the requests that tried it`);
  await setFault(faulty, { mode: "down" });
  const link = await until("a breaker event linking to its requests", async () => {
    await page.goto(base + "/console/events?kind=breaker");
    const a = page.locator(".affected a", { hasText: faulty });
    return (await a.count()) > 0 ? a.first() : null;
  });
  await Promise.all([page.waitForURL(/\/console\/requests\?/), link.click()]);
  const filtered = new URL(page.url());
  assert.equal(filtered.searchParams.get("backend"), faulty);
  assert.ok(filtered.searchParams.get("from") && filtered.searchParams.get("to"), "the link gives a time range");
  // The usage writer stores requests a moment after they end.
  await until(`requests that tried ${faulty} with a failover`, async () => {
    await page.reload();
    return (await page.locator("tr.req").count()) > 0 && (await page.locator("tr.req", { hasText: "yes" }).count()) > 0;
  });
  await page.screenshot({ path: join(shots, "console-requests.png"), fullPage: true });

  step("a failed-over request opens as a timeline of its attempts");
  const failedOver = page.locator("tr.req", { hasText: "yes" }).first();
  const id = await failedOver.getAttribute("data-id");
  await Promise.all([page.waitForURL(new RegExp(`/console/requests/${id}$`)), failedOver.locator("a").first().click()]);
  await page.waitForSelector("svg#timeline");
  const bars = await page.$$eval("svg#timeline g.attempt", (gs) => gs.map((g) => ({ cls: g.getAttribute("class"), text: g.querySelector("text").textContent })));
  assert.ok(bars.length >= 2, `a failover with ${bars.length} attempts`);
  assert.ok(bars[0].cls.includes("failed") && bars[0].text.startsWith(faulty), `the first attempt: ${JSON.stringify(bars[0])}`);
  assert.ok(bars[bars.length - 1].cls.includes("ok"), `the last attempt: ${JSON.stringify(bars[bars.length - 1])}`);
  // One row per attempt, in order; the answering one starts no earlier
  // than the first (the simulator answers at once: both may start at 0).
  const rects = await page.$$eval("svg#timeline g.attempt rect", (rs) => rs.map((r) => [Number(r.getAttribute("x")), Number(r.getAttribute("y"))]));
  assert.ok(rects[rects.length - 1][0] >= rects[0][0], `the answering attempt starts before the first: ${rects}`);
  assert.ok(rects.every((r, i) => i === 0 || r[1] > rects[i - 1][1]), `attempts not in rows in order: ${rects}`);
  assert.equal(await page.locator("#attempts tbody tr").count(), bars.length, "the attempts' table");
  await page.screenshot({ path: join(shots, "console-request.png"), fullPage: true });

  step("the filter form narrows the list: failover yes, then a status class");
  await page.goto(base + "/console/requests");
  await page.selectOption('select[name="failover"]', "yes");
  await Promise.all([page.waitForURL(/failover=yes/), page.click('#request-filter button[type=submit]')]);
  const rows = page.locator("tr.req");
  assert.ok((await rows.count()) > 0, "no failed-over requests listed");
  for (const t of await rows.allTextContents()) assert.ok(t.includes("yes"), `a row without a failover: ${t}`);
  await page.fill('input[name="status"]', "nonsense");
  await Promise.all([page.waitForURL(/status=nonsense/), page.click('#request-filter button[type=submit]')]);
  assert.match(await page.textContent("#requests-error"), /status/);

  step("at a phone's width the pages do not scroll sideways; the tables scroll in their box");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(base + "/console/requests");
  await page.waitForSelector("#requests");
  await noSideScroll(page, "the request log");
  await page.goto(base + `/console/requests/${id}`);
  await page.waitForSelector("svg#timeline");
  await noSideScroll(page, "a request's page");
  await page.screenshot({ path: join(shots, "console-request-phone.png"), fullPage: true });
  await page.setViewportSize({ width: 1500, height: 1000 });
  await setFault(faulty, { mode: "none" });

  step("a viewer sees the log but no end users");
  await Promise.all([page.waitForURL(base + "/console/login"), page.click("#logout")]);
  await signIn(page, env("VIEWER_KEY"));
  await page.goto(base + "/console/requests");
  await page.waitForSelector("#requests");
  assert.equal(await page.locator('#requests th', { hasText: "End user" }).count(), 0, "a viewer sees the end user column");
  assert.equal(await page.locator('input[name="end_user"]').count(), 0, "a viewer can filter by end user");
  assert.ok((await page.locator("tr.req").count()) > 0, "a viewer sees no requests");

  assert.deepEqual(errors, [], "errors in the page");
  console.log("ok: every browser check passed");
} finally {
  await context.close();
  await rm(profile, { recursive: true, force: true });
}
