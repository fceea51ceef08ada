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
// FAULT_BACKEND, CHROMIUM.
import { env, step, until, setFault as simFault, run, atWidth, noSideScroll, shot, signIn, signOut, DESKTOP, PHONE } from "./lib.mjs";
import assert from "node:assert/strict";

const base = env("CONSOLE_URL");
const sim = env("SIM_URL");
const faulty = env("FAULT_BACKEND");
const setFault = (name, fault) => simFault(sim, name, fault);

// 400: the bad filter the test sends on purpose; 401, 403, 404: probes.
await run(async ({ page }) => {
  step("a visitor is sent to the login from the request log");
  for (const p of ["/console/requests", "/console/requests/anything"]) {
    await page.goto(base + p);
    assert.equal(new URL(page.url()).pathname, "/console/login", `${p} did not lead to the login`);
  }

  step("the admin signs in; the nav links to Requests");
  await signIn(page, base, env("ADMIN_KEY"));
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
  await shot(page, "console-requests.png");

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
  await shot(page, "console-request.png");

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
  await atWidth(page, PHONE);
  await page.goto(base + "/console/requests");
  await page.waitForSelector("#requests");
  await noSideScroll(page, "the request log");
  await page.goto(base + `/console/requests/${id}`);
  await page.waitForSelector("svg#timeline");
  await noSideScroll(page, "a request's page");
  await shot(page, "console-request-phone.png");
  await atWidth(page, DESKTOP);
  await setFault(faulty, { mode: "none" });

  step("a viewer sees the log but no end users");
  await signOut(page, base);
  await signIn(page, base, env("VIEWER_KEY"));
  await page.goto(base + "/console/requests");
  await page.waitForSelector("#requests");
  assert.equal(await page.locator('#requests th', { hasText: "End user" }).count(), 0, "a viewer sees the end user column");
  assert.equal(await page.locator('input[name="end_user"]').count(), 0, "a viewer can filter by end user");
  assert.ok((await page.locator("tr.req").count()) > 0, "a viewer sees no requests");

}, { allow: /400|401|403|404|Unauthorized|Forbidden|Bad Request/ });
