// Browser test of the switchover console, run by
// gateway/console_browser_test.go against a gateway in front of the
// simulator. Playwright drives the system's Chromium; no browser is
// downloaded. Every wait is Playwright's or a polled condition with a
// deadline, never a sleep.
//
// Environment: CONSOLE_URL (the admin listener), ADMIN_KEY, VIEWER_KEY,
// SIM_URL (a simulator listener, for faults and counters), POOLS (JSON:
// pool -> backends), FAULT_BACKEND, DRAIN_BACKEND, FAULT_POOL,
// CHROMIUM, STORE_KEY_ID, STORE_KEY_SECRET, API_URL (the gateway's API listener).
import { env, step, until, WAIT, setFault as simFault, run, atWidth, noSideScroll, tablesInScrollBoxes, shot, signIn, signOut, clickAndLoad, DESKTOP, PHONE } from "./lib.mjs";
import assert from "node:assert/strict";

const base = env("CONSOLE_URL");
const sim = env("SIM_URL");
const pools = JSON.parse(env("POOLS"));
const faulty = env("FAULT_BACKEND");
const drained = env("DRAIN_BACKEND");
const pool = env("FAULT_POOL");

const row = (p, b) => `tr[data-member="${p}/${b}"]`;
const setFault = (name, fault) => simFault(sim, name, fault);

async function simStats() {
  const r = await fetch(`${sim}/_sim/stats`);
  assert.equal(r.status, 200, "sim stats");
  return r.json();
}
function calls(stats, name) {
  const s = stats[name] ?? (stats.deployments && stats.deployments[name]);
  assert.ok(s, `no sim stats for ${name}: ${JSON.stringify(stats).slice(0, 300)}`);
  return s.calls;
}

// 401, 403: the probes the test sends on purpose.
await run(async (b) => {
  const { page, context } = b;

  step("an unauthenticated visitor sees only the login page");
  for (const p of ["/console/", "/console/events", "/console/config", "/console/keys", "/"]) {
    await page.goto(base + p);
    assert.equal(new URL(page.url()).pathname, "/console/login", `${p} did not lead to the login`);
    const html = await page.content();
    for (const b of Object.values(pools).flat()) assert.ok(!html.includes(b), `the login page names backend ${b}`);
  }
  assert.equal(await page.locator("form#login input#key[type=password]").count(), 1);
  const anon = await page.evaluate(async () => [(await fetch("/console/api/view")).status, (await fetch("/console/stream")).status]);
  assert.deepEqual(anon, [401, 401], "the scripts' endpoints without a session");

  step("a wrong key is refused");
  await page.fill("#key", "not-the-key-0123456789");
  await page.click("form#login button[type=submit]");
  await page.waitForSelector("#login-error");
  assert.equal(new URL(page.url()).pathname, "/console/login");

  step("the admin signs in");
  await page.fill("#key", env("ADMIN_KEY"));
  await Promise.all([page.waitForURL(base + "/console/"), page.click("form#login button[type=submit]")]);
  assert.match(await page.textContent("#who"), /admin/);

  step("the overview renders every pool and backend");
  for (const [p, backends] of Object.entries(pools)) {
    await page.waitForSelector(`section[data-pool="${p}"]`);
    for (const b of backends) await page.waitForSelector(row(p, b));
  }
  await page.waitForSelector("#live.on");
  await page.waitForSelector(`svg[data-chart="${pool}"] polyline`, { state: "attached" });
  await page.waitForFunction(([r]) => {
    const el = document.querySelector(r + ' [data-f="rps"]');
    return el && parseFloat(el.textContent) > 0;
  }, [row(pool, faulty)]);

  // The chart grows live; for the screenshot, with some history before
  // the outage and after it, so that it shows the failover.
  const [history, afterwards] = process.env.SHOT_DIR ? [8, 6] : [2, 1];
  const points = (n) => page.waitForFunction(([p, n]) => {
    const svg = document.querySelector(`svg[data-chart="${p}"]`);
    return svg && Number(svg.dataset.points || 0) >= n;
  }, [pool, n], { timeout: WAIT + n * 1000 });
  await points(history);
  const pointsBefore = Number(await page.getAttribute(`svg[data-chart="${pool}"]`, "data-points"));

  step(`a fault in the simulator opens ${faulty}'s breaker in the page, without a reload`);
  await page.evaluate(() => { window.__notReloaded = true; });
  await setFault(faulty, { mode: "down" });
  await page.waitForSelector(`${row(pool, faulty)}.state-open`);
  assert.equal(await page.textContent(`${row(pool, faulty)} [data-f="breaker"]`), "open");
  assert.ok(await page.evaluate(() => window.__notReloaded === true), "the page was reloaded");
  assert.notEqual((await page.textContent(`${row(pool, faulty)} [data-f="why"]`)).trim(), "", "no cause shown for the open breaker");
  // Traffic has moved: a tier-2 member's chart line and rate rise.
  await page.waitForFunction(([p, f]) => {
    const sec = document.querySelector(`section[data-pool="${p}"]`);
    return [...sec.querySelectorAll("tr.member")].some((tr) =>
      tr.dataset.member !== `${p}/${f}` && parseFloat(tr.querySelector('[data-f="rps"]').textContent) > 0);
  }, [pool, faulty]);
  await page.waitForFunction(([p, f]) => {
    const el = document.querySelector(`section[data-pool="${p}"] [data-f="active"]`);
    return el && !el.textContent.includes(f);
  }, [pool, faulty]);
  await points(pointsBefore + afterwards);
  await shot(page, "console-overview.png");

  step(`draining ${drained} from the page (click, confirm) stops its traffic`);
  await page.click(`${row(pool, drained)} button[data-act="drain"]`);
  await page.waitForSelector("dialog#confirm[open]");
  const text = await page.textContent("#confirm-text");
  assert.match(text, new RegExp(`^Drain ${drained}: no new requests go to it`), `confirmation: ${text}`);
  await clickAndLoad(page, "#confirm-ok");
  assert.match(await page.textContent("#flash"), new RegExp(`Done: drain ${drained}`));
  await page.waitForSelector(`${row(pool, drained)}.drained`);
  const before = await simStats();
  // Others keep answering while the drained one gets nothing new.
  const others = Object.values(pools).flat().filter((b) => b !== drained && b !== faulty);
  await until("traffic to the remaining backends", async () => {
    const now = await simStats();
    return others.some((b) => calls(now, b) >= calls(before, b) + 5);
  });
  const after = await simStats();
  assert.equal(calls(after, drained), calls(before, drained), `${drained} was called after its drain`);

  step("an action without the CSRF token is refused");
  const refused = await page.evaluate(async (b) => {
    const post = (body, headers = {}) => fetch("/console/actions", {
      method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers }, body,
    }).then((r) => r.status);
    return [await post(`action=restore&backend=${b}`), await post(`action=restore&backend=${b}&csrf=forged`),
      await post(`action=restore&backend=${b}`, { "X-CSRF-Token": "forged" })];
  }, drained);
  assert.deepEqual(refused, [403, 403, 403]);
  const view = await page.evaluate(() => fetch("/console/api/view").then((r) => r.json()));
  const m = view.pools.find((p) => p.name === pool).members.find((x) => x.backend === drained);
  assert.equal(m.drained, true, "a refused action changed something");

  step("the timeline shows the failover and who drained");
  await page.goto(base + "/console/events");
  await page.waitForSelector(`tr.ev[data-kind="admin:drain"]`);
  assert.match(await page.textContent(`tr.ev[data-kind="admin:drain"] .detail`), new RegExp(`drained backend ${drained} \\(by admin\\)`));
  assert.ok(await page.locator(`tr.ev[data-kind="breaker"]`, { hasText: faulty }).count() > 0, "no breaker event");
  await page.selectOption('select[name="kind"]', "admin");
  await Promise.all([page.waitForURL(/kind=admin/), page.click('#filter button[type="submit"]')]);
  const kinds = await page.$$eval("tr.ev", (rs) => rs.map((r) => r.dataset.kind));
  assert.ok(kinds.length > 0 && kinds.every((k) => k.startsWith("admin:")), `filtered kinds ${kinds}`);
  if (process.env.SHOT_DIR) {
    await page.goto(base + "/console/events");
    await shot(page, "console-events.png");
  }

  step("the config page shows the running config, redacted");
  await page.goto(base + "/console/config");
  const yaml = await page.textContent("#running");
  assert.ok(yaml.includes("[redacted]"), "no redaction shown");
  for (const k of [env("ADMIN_KEY"), env("VIEWER_KEY")]) assert.ok(!(await page.content()).includes(k), "a key is on the config page");

  step("the keys page lists the store's key and its team's spend, never its secret");
  const keyID = env("STORE_KEY_ID");
  // The usage is written within a second of the requests: reload until the
  // spend by team has it.
  await until("the spend of team research on the keys page", async () => {
    await page.goto(base + "/console/keys");
    return (await page.textContent('table.spend[data-by="team"]')).includes("research");
  });
  assert.ok((await page.textContent("#keys")).includes(keyID), `key ${keyID} not listed`);
  assert.ok(!(await page.content()).includes(env("STORE_KEY_SECRET")), "the keys page shows a key's secret");
  await shot(page, "console-keys.png");

  step("an admin creates a key in the page (confirmed), sees its secret once, and revokes it");
  await page.fill('#key-create input[name="name"]', "browser-made");
  await page.fill('#key-create input[name="rpm"]', "120");
  await page.fill('#key-create input[name="budget"]', "5/day");
  await page.click('#key-create button[data-act="key-create"]');
  await page.click("#confirm-ok");
  await page.waitForSelector("#secret");
  assert.ok(page.url().endsWith("/console/keys/secret"), `secret page at ${page.url()}`);
  const made = (await page.textContent("#secret")).trim();
  assert.match(made, /^sk-/, "no secret on the result page");
  const madeID = (await page.textContent("h1")).match(/key_\w+/)[0];
  await page.reload();
  assert.ok(!(await page.content()).includes(made), "the secret is shown again after a reload");
  await page.goto(base + "/console/keys");
  const madeRow = `#keys tr[data-key="${madeID}"]`;
  assert.ok((await page.textContent(madeRow)).includes("browser-made"), "the new key is not listed");
  assert.ok(!(await page.content()).includes(made), "the keys page shows the new secret");
  await page.click(`${madeRow} button[data-act="key-revoke"]`);
  await page.click("#confirm-ok");
  await page.waitForSelector("#flash");
  assert.ok((await page.textContent("#flash")).startsWith(`Done: revoke key ${madeID}`), await page.textContent("#flash"));
  assert.ok(await page.locator(`${madeRow}.revoked`).count() === 1, "the revoked key is not shown revoked");
  const r = await fetch(env("API_URL") + "/v1/chat/completions", {
    method: "POST", headers: { Authorization: `Bearer ${made}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "chat-prod", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(r.status, 401, "the revoked key still works");

  step("at 390 px (a phone) the overview, events and keys pages do not scroll sideways; wide tables scroll in their box");
  await atWidth(page, PHONE);
  for (const p of ["/console/", "/console/events", "/console/keys"]) {
    await page.goto(base + p);
    await noSideScroll(page, p);
    await tablesInScrollBoxes(page, p);
    if (p === "/console/") {
      // The breaker column is there to scroll to, not cut off.
      const cell = `${row(pool, drained)} [data-f="breaker"]`;
      await page.locator(cell).scrollIntoViewIfNeeded();
      assert.ok(await page.locator(cell).isVisible(), "the breaker column cannot be reached at 390 px");
      await shot(page, "console-overview-390.png");
    }
  }
  await atWidth(page, DESKTOP);

  step("/favicon.ico is an image, not a 401");
  assert.deepEqual(await page.evaluate(async () => { const r = await fetch("/favicon.ico"); return [r.status, r.headers.get("content-type")]; }), [200, "image/png"]);

  step(`without JavaScript, the page after a drain shows ${drained} drained with its Restore button`);
  {
    // The page's script is answered empty: forms post without it.
    // submitted clicks and waits for the next page (POST, redirect, GET).
    const submitted = async (sel) => {
      await page.evaluate(() => { window.__before = true; });
      await page.click(sel);
      await page.waitForFunction(() => window.__before === undefined && document.readyState !== "loading" && location.pathname === "/console/");
    };
    const nojs = "**/console/static/console.js";
    await context.route(nojs, (r) => r.fulfill({ status: 200, contentType: "text/javascript", body: "" }));
    await page.goto(base + "/console/");
    await page.waitForSelector(`${row(pool, drained)}.drained`, { state: "attached" });
    await submitted(`${row(pool, drained)} button[data-act="restore"]`);
    assert.equal(await page.locator(`${row(pool, drained)}.drained`).count(), 0, "the page after a restore shows the member drained");
    assert.ok(await page.isVisible(`${row(pool, drained)} button[data-act="drain"]`), "no Drain button after the restore");
    await submitted(`${row(pool, drained)} button[data-act="drain"]`);
    assert.equal(await page.locator(`${row(pool, drained)}.drained`).count(), 1, "the page after a drain shows the member undrained");
    assert.ok(await page.isVisible(`${row(pool, drained)} button[data-act="restore"]`), "no Restore button after the drain, without JavaScript");
    await context.unroute(nojs);
  }

  step(`undo: restore ${drained} and clear the fault`);
  await page.goto(base + "/console/");
  await page.click(`${row(pool, drained)} button[data-act="restore"]`);
  await page.waitForSelector("dialog#confirm[open]");
  assert.match(await page.textContent("#confirm-text"), new RegExp(`^Restore ${drained}`));
  await clickAndLoad(page, "#confirm-ok");
  await page.waitForSelector(`${row(pool, drained)}:not(.drained)`);
  await setFault(faulty, { mode: "none" });

  step("sign out");
  await signOut(page, base);
  await page.goto(base + "/console/");
  assert.equal(new URL(page.url()).pathname, "/console/login");

  step("a viewer sees but cannot act");
  await signIn(page, base, env("VIEWER_KEY"));
  await page.waitForSelector(row(pool, drained));
  assert.equal(await page.locator("button[data-act]").count(), 0, "a viewer has action buttons");
  const viewerPost = await page.evaluate(async (b) => {
    const csrf = document.querySelector('meta[name="csrf"]').content;
    const r = await fetch("/console/actions", {
      method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf }, body: `action=drain&backend=${b}`,
    });
    return r.status;
  }, drained);
  assert.equal(viewerPost, 403, "a viewer's action");

  b.noErrors("before the gateway stops");

  step("while the admin listener is down, a banner says the page is stale");
  await page.waitForSelector("#live.on");
  assert.ok(!(await page.isVisible("#stale")), "a stale banner while live");
  console.log("SHUTDOWN_GATEWAY"); // the Go test stops the gateway
  await page.waitForSelector("#stale", { state: "visible" });
  assert.match(await page.textContent("#stale"), /lost the gateway/);
  await shot(page, "console-stale.png");
  b.errors.splice(0); // the gateway is down: the page's requests fail, as they should
}, { allow: /401|403|Unauthorized|Forbidden/ });
