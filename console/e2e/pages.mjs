// Browser test of every console page and every action, at a desktop's
// and at a phone's width, as a visitor, as the admin and as a viewer; run
// by gateway/console_pages_browser_test.go (TestConsolePagesInBrowser)
// against one gateway in front of the simulator with a store and steady
// traffic, in one browser.
//
// Each page, at each width and for each role: its key content is visible
// (scrolled to, in a table's own box), the page does not scroll sideways,
// every table is in a box that scrolls on its own, and the page logs no
// error. The admin sees the action buttons; the viewer sees none, and a
// POST the viewer forges with the session's own CSRF token to each
// action's address is refused with 403 and changes nothing.
//
// Each action, at each width, as the admin: drain and restore, force the
// breaker open and closed, reprioritise and change the weight of a member
// and reset it, reload the configuration (each through its confirmation,
// which fits the window, with a result message and the page after it
// showing the new state; a cancelled confirmation does nothing); create
// a key (its secret shown once; a key the API refuses says why), edit its
// limits, rotate it (the new secret shown once, the old one kept for the
// grace period), revoke it; create a team and edit its limits; filter the
// events, the requests and the spend.
//
// Environment: CONSOLE_URL, ADMIN_KEY, VIEWER_KEY, API_URL, STORE_KEY_ID,
// FILE_KEY (the name of the configuration file's key), CHROMIUM.
import { env, step, until, run, atWidth, noSideScroll, tablesInScrollBoxes, visible, signIn, signOut, shot, clickAndLoad, DESKTOP, PHONE } from "./lib.mjs";
import assert from "node:assert/strict";

const base = env("CONSOLE_URL");
const api = env("API_URL");
const storeKey = env("STORE_KEY_ID");
const fileKey = env("FILE_KEY");
const POOL = "chat-prod";
const TARGET = "westeurope"; // a tier-2 member of chat-prod, also in batch
const row = (p, b) => `tr[data-member="${p}/${b}"]`;
const WIDTHS = [DESKTOP, PHONE];

// pages are the console's pages behind the sign-in (console/console.go's
// routes), with what must be visible on each. The request's own page is
// added once the request log has a request.
const pages = [
  { path: "/console/", see: [`section[data-pool="${POOL}"]`, `${row(POOL, TARGET)} [data-f="breaker"]`, `${row(POOL, TARGET)} [data-f="p95"]`, `svg[data-chart="${POOL}"]`, "#live"] },
  { path: "/console/events", see: ["form#filter", "#events"] },
  { path: "/console/config", see: ["#reload-diff", "#running"] },
  { path: "/console/fleet", see: ["#no-fleet"] },
  { path: "/console/keys", see: [`#file-keys tr[data-key="${fileKey}"]`, `#keys tr[data-key="${storeKey}"] td:last-child`, "#teams", 'table.spend[data-by="team"]'] },
  { path: "/console/requests", see: ["form#request-filter", "tr.req", "tr.req td.n:last-child"] },
  { path: "/console/spend", see: ["form#spend-filter", "#requests-chart", "#spend-chart", "#p95-chart"] },
];
// Only the admin's pages have these.
const adminOnly = {
  "/console/": [`${row(POOL, TARGET)} button[data-act="drain"]`, `${row(POOL, TARGET)} button[data-act="set_member"]`],
  "/console/config": ['button[data-act="reload"]'],
  "/console/keys": [`#keys tr[data-key="${storeKey}"] button[data-act="key-revoke"]`, "#team-create", "#key-create"],
};

// checkPage opens path and checks it as the module's comment says.
async function checkPage(b, p, size, role) {
  const { page } = b;
  const what = `${p.path} (${role}, ${size.name})`;
  await page.goto(base + p.path);
  assert.equal(new URL(page.url()).pathname, p.path.split("?")[0], `${what} went to ${page.url()}`);
  await visible(page, [...p.see, `nav a[href="${p.nav ?? p.path}"][aria-current="page"]`, ...(role === "admin" ? adminOnly[p.path] ?? [] : [])], what);
  if (role !== "admin") {
    const acts = await page.$$eval("button[data-act], form.act, #key-create, #team-create", (els) => els.map((el) => el.outerHTML.slice(0, 80)));
    assert.deepEqual(acts, [], `${what}: a viewer has actions`);
  }
  await noSideScroll(page, what);
  await tablesInScrollBoxes(page, what);
  b.noErrors(what);
}

// confirmed clicks sel, checks the confirmation's text against confirm,
// confirms, waits for the page after the action and returns its message.
async function confirmed(page, sel, confirm) {
  await page.click(sel);
  await page.waitForSelector("dialog#confirm[open]");
  const text = await page.textContent("#confirm-text");
  assert.match(text, confirm, `the confirmation of ${sel}`);
  // The dialog fits the window, a phone's too.
  const box = await page.$eval("dialog#confirm", (d) => { const r = d.getBoundingClientRect(); return [r.left, r.right, innerWidth]; });
  assert.ok(box[0] >= 0 && box[1] <= box[2], `the confirmation of ${sel} is outside the window: ${box}`);
  await visible(page, ["#confirm-ok", "#confirm-cancel"], `the confirmation of ${sel}`);
  await clickAndLoad(page, "#confirm-ok");
  return page.locator("#flash").count().then((n) => (n ? page.textContent("#flash") : ""));
}

// chat sends a request to the API with secret; it returns the status.
async function chat(secret) {
  const r = await fetch(api + "/v1/chat/completions", {
    method: "POST", headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: POOL, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  await r.arrayBuffer();
  return r.status;
}

// poolActions does every action of the overview on TARGET.
async function poolActions(page, size) {
  const r = row(POOL, TARGET);
  const field = (f) => page.textContent(`${r} [data-f="${f}"]`);
  await page.goto(base + "/console/");

  step(`(${size.name}) a cancelled drain does nothing`);
  await page.click(`${r} button[data-act="drain"]`);
  await page.waitForSelector("dialog#confirm[open]");
  await page.click("#confirm-cancel");
  await page.waitForSelector("dialog#confirm:not([open])", { state: "attached" });
  assert.equal(await page.locator(`${r}.drained`).count(), 0, "a cancelled drain drained");

  step(`(${size.name}) drain and restore ${TARGET}`);
  let flash = await confirmed(page, `${r} button[data-act="drain"]`, new RegExp(`^Drain ${TARGET}: no new requests`));
  assert.match(flash, new RegExp(`^Done: drain ${TARGET}`));
  assert.equal(await page.locator(`${r}.drained`).count(), 1, "the page after a drain shows the member undrained");
  flash = await confirmed(page, `${r} button[data-act="restore"]`, new RegExp(`^Restore ${TARGET}`));
  assert.match(flash, new RegExp(`^Done: restore ${TARGET}`));
  assert.equal(await page.locator(`${r}.drained`).count(), 0, "the page after a restore shows the member drained");

  step(`(${size.name}) force ${TARGET}'s breaker open, then closed`);
  flash = await confirmed(page, `${r} button[data-act="breaker_open"]`, new RegExp(`^Force the breaker of ${TARGET} open`));
  assert.match(flash, new RegExp(`^Done: force the breaker of ${TARGET} open`));
  assert.equal(await field("breaker"), "open", "the page after forcing the breaker open");
  flash = await confirmed(page, `${r} button[data-act="breaker_close"]`, new RegExp(`^Force the breaker of ${TARGET} closed`));
  assert.match(flash, new RegExp(`^Done: force the breaker of ${TARGET} closed`));
  assert.equal(await field("breaker"), "closed", "the page after forcing the breaker closed");

  step(`(${size.name}) reprioritise ${TARGET} to tier 1, then reset`);
  const tier = await field("priority");
  await page.fill(`${r} input[name="priority"]`, "1");
  flash = await confirmed(page, `${r} button[data-act="set_member"]`, new RegExp(`^Set ${TARGET} in pool ${POOL} to priority 1 until reset`));
  assert.match(flash, new RegExp(`^Done: set ${TARGET} in pool ${POOL} to priority 1 until reset`));
  assert.equal(await field("priority"), "1", "the page after a reprioritisation");
  assert.equal(await page.locator(`${r}.overridden`).count(), 1, "not shown overridden");
  flash = await confirmed(page, `${r} button[data-act="reset_member"]`, new RegExp(`^Reset ${TARGET}`, "i"));
  assert.match(flash, /^Done: /);
  assert.equal(await field("priority"), tier, "the page after a reset");
  assert.equal(await page.locator(`${r}.overridden`).count(), 0, "shown overridden after a reset");

  step(`(${size.name}) change ${TARGET}'s weight, then reset`);
  await page.fill(`${r} input[name="weight"]`, "3");
  flash = await confirmed(page, `${r} button[data-act="set_member"]`, new RegExp(`^Set ${TARGET} in pool ${POOL} to weight 3 until reset`));
  assert.match(flash, new RegExp(`^Done: set ${TARGET} in pool ${POOL} to weight 3 until reset`));
  assert.equal(await field("weight"), "3", "the page after a weight change");
  assert.equal(await field("priority"), tier, "a weight change changed the tier");
  await confirmed(page, `${r} button[data-act="reset_member"]`, /./);
  assert.equal(await page.locator(`${r}.overridden`).count(), 0, "shown overridden after a reset");

  step(`(${size.name}) the events say what the admin did, and filter by kind`);
  await page.goto(base + "/console/events");
  const details = await page.$$eval('tr.ev[data-kind^="admin:"] .detail', (ds) => ds.map((d) => d.textContent));
  for (const want of [`drained backend ${TARGET}`, `restored backend ${TARGET}`, `forced the breaker of ${TARGET} open`,
    `forced the breaker of ${TARGET} closed`, `${POOL}: priority ${tier} → 1`, `${POOL}: weight 1 → 3`]) {
    assert.ok(details.some((d) => d.includes(want)), `no event says "${want}": ${details.join(" | ")}`);
  }
  // A weight change is not recorded as a change of priority (issue 29).
  assert.ok(!details.some((d) => /priority 0|weight 0|priority \d+ → \d+, weight/.test(d)), `an event names a value not set: ${details.join(" | ")}`);
  await page.selectOption('select[name="kind"]', "admin");
  await Promise.all([page.waitForURL(/kind=admin/), page.click('#filter button[type="submit"]')]);
  const kinds = await page.$$eval("tr.ev", (rs) => rs.map((r) => r.dataset.kind));
  assert.ok(kinds.length > 0 && kinds.every((k) => k.startsWith("admin:")), `filtered kinds ${kinds}`);
  await noSideScroll(page, `the events filtered (${size.name})`);
}

// reload reloads the configuration from the config page.
async function reload(page, size) {
  step(`(${size.name}) reload the configuration from the config page`);
  await page.goto(base + "/console/config");
  const flash = await confirmed(page, 'button[data-act="reload"]', /^Reload the configuration from .*: 0 line\(s\) change/);
  assert.match(flash, /^Done: reload the configuration file/);
  assert.equal(new URL(page.url()).pathname, "/console/config", "the reload's result is not on the config page");
  await visible(page, ["#flash", "#running"], `the config page after a reload (${size.name})`);
  await noSideScroll(page, `the config page after a reload (${size.name})`);
}

// secretPage checks the page that shows a new secret once and returns it.
async function secretPage(page, size, what) {
  assert.ok(page.url().endsWith("/console/keys/secret"), `${what}: the secret's page is ${page.url()}`);
  const secret = (await page.textContent("#secret")).trim();
  assert.match(secret, /^sk-/, `${what}: no secret`);
  await visible(page, ["#secret", "#secret-once", "#back-to-keys"], what);
  await noSideScroll(page, `${what}'s secret page (${size.name})`);
  await page.reload();
  assert.ok(!(await page.content()).includes(secret), `${what}: the secret is shown again after a reload`);
  return secret;
}

// keyActions creates, edits, rotates and revokes a key, and creates and
// edits a team, in the keys page.
async function keyActions(page, size) {
  const team = `team-${size.name}`;
  step(`(${size.name}) create team ${team}, then edit its limits`);
  await page.goto(base + "/console/keys");
  await page.fill('#team-create input[name="name"]', team);
  await page.fill('#team-create input[name="rpm"]', "100");
  await page.fill('#team-create input[name="budget"]', "20/month");
  let flash = await confirmed(page, '#team-create button[data-act="team-put"]', /^Create the team entered/);
  assert.match(flash, /^Done: /, `the team's creation: ${flash}`);
  const teamRow = `#teams tr[data-team="${team}"]`;
  assert.match(await page.textContent(teamRow), /100.*\$20\.00\/month/, "the new team's limits");
  await page.fill(`${teamRow} input[name="rpm"]`, "200");
  flash = await confirmed(page, `${teamRow} button[data-act="team-put"]`, new RegExp(`^Set the limits of team ${team}`));
  assert.match(flash, /^Done: /, `the team's edit: ${flash}`);
  assert.match(await page.textContent(teamRow), /200/, "the team's new rpm");

  step(`(${size.name}) a key the API refuses: the page says why, and no key is made`);
  await page.fill('#key-create input[name="name"]', `refused-${size.name}`);
  await page.fill('#key-create input[name="rpm"]', "lots");
  flash = await confirmed(page, '#key-create button[data-act="key-create"]', /^Create the key entered/);
  assert.match(flash, /^Failed: .*rpm: "lots" is not a count/, `a refused key's result: ${flash}`);
  assert.ok(page.url().endsWith("/console/keys"), `a refused key led to ${page.url()}`);
  assert.ok(!(await page.textContent("#keys")).includes(`refused-${size.name}`), "a refused key is listed");

  step(`(${size.name}) create a key in team ${team}: its secret is shown once`);
  await page.fill('#key-create input[name="name"]', `browser-${size.name}`);
  await page.fill('#key-create input[name="team"]', team);
  await page.fill('#key-create input[name="rpm"]', "120");
  await page.fill('#key-create input[name="budget"]', "5/day");
  await page.fill('#key-create input[name="tags"]', "env:e2e");
  await confirmed(page, '#key-create button[data-act="key-create"]', /^Create the key entered\? Its secret is shown once/);
  const id = (await page.textContent("h1")).match(/key_\w+/)[0];
  const secret = await secretPage(page, size, "a new key");
  assert.equal(await chat(secret), 200, "the new key does not work");

  step(`(${size.name}) edit the key's limits`);
  await page.goto(base + "/console/keys");
  const keyRow = `#keys tr[data-key="${id}"]`;
  assert.ok(!(await page.content()).includes(secret), "the keys page shows the new secret");
  await page.click(`${keyRow} details.edit summary`);
  await page.fill(`${keyRow} input[name="rpm"]`, "240");
  await page.fill(`${keyRow} input[name="cache"]`, "ttl=5m");
  flash = await confirmed(page, `${keyRow} button[data-act="key-edit"]`, new RegExp(`^Change key ${id}`));
  assert.match(flash, /^Done: /, `the key's edit: ${flash}`);
  assert.match(await page.textContent(keyRow), /240/, "the key's new rpm is not shown");
  assert.match(await page.textContent(`${keyRow} td.settings`), /cache ttl=5m0s/, "the key's new cache is not shown");

  step(`(${size.name}) rotate the key with a grace period: the new secret is shown once, the old one still works`);
  await page.fill(`${keyRow} input[name="grace"]`, "10m");
  await confirmed(page, `${keyRow} button[data-act="key-rotate"]`, new RegExp(`^Give key ${id} \\(browser-${size.name}\\) a new secret`));
  await visible(page, ["#grace-until"], "the rotation's grace");
  const rotated = await secretPage(page, size, "a rotated key");
  assert.notEqual(rotated, secret, "the rotation kept the secret");
  assert.deepEqual([await chat(rotated), await chat(secret)], [200, 200], "the new secret, the old one in its grace");

  step(`(${size.name}) revoke the key`);
  await page.goto(base + "/console/keys");
  flash = await confirmed(page, `${keyRow} button[data-act="key-revoke"]`, new RegExp(`^Revoke key ${id}`));
  assert.ok(flash.startsWith(`Done: revoke key ${id}`), flash);
  assert.equal(await page.locator(`${keyRow}.revoked`).count(), 1, "the revoked key is not shown revoked");
  assert.deepEqual([await chat(rotated), await chat(secret)], [401, 401], "a revoked key's secrets still work");
}

// filters uses the filter forms of the requests and spend pages.
async function filters(page, size) {
  step(`(${size.name}) filter the requests by pool and by failover, then by a request's id`);
  await page.goto(base + "/console/requests");
  await page.fill('#request-filter input[name="pool"]', "batch");
  await page.selectOption('#request-filter select[name="failover"]', "no");
  await Promise.all([page.waitForURL(/pool=batch.*failover=no/), page.click("#request-filter button[type=submit]")]);
  const pools = await page.$$eval("tr.req", (rs) => rs.map((r) => r.children[5].textContent));
  assert.ok(pools.length > 0 && pools.every((p) => p === "batch"), `pools of the filtered requests: ${pools}`);
  await noSideScroll(page, `the requests filtered (${size.name})`);
  const one = await page.locator("tr.req").first().getAttribute("data-id");
  await page.goto(base + "/console/requests");
  await page.fill('#request-filter input[name="q"]', one);
  await Promise.all([page.waitForURL(/q=/), page.click("#request-filter button[type=submit]")]);
  assert.deepEqual(await page.$$eval("tr.req", (rs) => rs.map((r) => r.dataset.id)), [one], "the text filter by a request's id");

  step(`(${size.name}) spend over 7 days by model, traffic by pool`);
  await page.goto(base + "/console/spend");
  await page.selectOption('select[name="days"]', "7");
  await page.selectOption('select[name="by"]', "model");
  await page.selectOption('select[name="traffic"]', "pool");
  await Promise.all([page.waitForURL(/days=7&by=model&traffic=pool/), page.click("#spend-filter button[type=submit]")]);
  assert.equal(await page.locator("#spend-chart text.tick[text-anchor=middle]").count(), 7, "7 days on the x axis");
  await noSideScroll(page, `the spend filtered (${size.name})`);
}

// forged posts, from the viewer's page with its session's CSRF token, to
// each action's address, and returns their statuses.
async function forged(page, keyID) {
  return page.evaluate(async ([keyID, pool, backend]) => {
    const csrf = document.querySelector('meta[name="csrf"]').content;
    const post = (path, body) => fetch(path, {
      method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf }, body: `csrf=${csrf}&${body}`,
    }).then((r) => r.status);
    return {
      drain: await post("/console/actions", `action=drain&backend=${backend}`),
      breaker: await post("/console/actions", `action=breaker_open&backend=${backend}`),
      member: await post("/console/actions", `action=set_member&pool=${pool}&backend=${backend}&weight=9`),
      reload: await post("/console/actions", "action=reload"),
      create: await post("/console/keys/create", "name=forged"),
      edit: await post("/console/keys/edit", `id=${keyID}&rpm=1`),
      rotate: await post("/console/keys/rotate", `id=${keyID}`),
      revoke: await post("/console/keys/revoke", `id=${keyID}`),
      team: await post("/console/teams/put", "name=forged&rpm=1"),
    };
  }, [keyID, POOL, TARGET]);
}

// 403: the viewer's forged posts, on purpose.
await run(async (b) => {
  const { page } = b;

  step("a visitor gets the login page at each width");
  for (const size of WIDTHS) {
    await atWidth(page, size);
    await page.goto(base + "/console/keys");
    assert.equal(new URL(page.url()).pathname, "/console/login");
    await visible(page, ["form#login #key", "form#login button[type=submit]"], `the login (${size.name})`);
    await noSideScroll(page, `the login (${size.name})`);
    b.noErrors(`the login (${size.name})`);
  }

  step("the admin signs in; the request log has a request to open");
  await atWidth(page, DESKTOP);
  await signIn(page, base, env("ADMIN_KEY"));
  // The usage writer stores requests a moment after they end.
  const id = await until("a request in the log", async () => {
    await page.goto(base + "/console/requests");
    return page.locator("tr.req").first().getAttribute("data-id", { timeout: 1000 }).catch(() => null);
  });
  pages.push({ path: `/console/requests/${id}`, nav: "/console/requests", see: ["#request", "#answered-by", "svg#timeline", "#attempts"] });

  for (const size of WIDTHS) {
    await atWidth(page, size);
    step(`(${size.name}) every page as the admin`);
    for (const p of pages) await checkPage(b, p, size, "admin");
    await poolActions(page, size);
    await reload(page, size);
    b.noErrors(`the pool's actions (${size.name})`);
    await keyActions(page, size);
    b.noErrors(`the keys' actions (${size.name})`);
    await filters(page, size);
    b.noErrors(`the filters (${size.name})`);
  }
  if (process.env.SHOT_DIR) {
    await page.goto(base + "/console/keys");
    await shot(page, "console-keys-phone.png");
  }

  step("a viewer sees every page at each width, with no action");
  await atWidth(page, DESKTOP);
  await signOut(page, base);
  await signIn(page, base, env("VIEWER_KEY"));
  for (const size of WIDTHS) {
    await atWidth(page, size);
    step(`(${size.name}) every page as a viewer`);
    for (const p of pages) await checkPage(b, p, size, "viewer");
  }

  step("a viewer's forged posts, with the session's own CSRF token, are refused and change nothing");
  await page.goto(base + "/console/keys");
  const statuses = await b.allowing(/403|Forbidden/, () => forged(page, storeKey));
  for (const [what, status] of Object.entries(statuses)) assert.equal(status, 403, `a viewer's ${what}: ${status}`);
  const keys = await page.textContent("#keys");
  assert.ok(!keys.includes("forged"), "a viewer created a key");
  assert.equal(await page.locator(`#keys tr[data-key="${storeKey}"].revoked`).count(), 0, "a viewer revoked a key");
  assert.equal(await page.locator('#teams tr[data-team="forged"]').count(), 0, "a viewer created a team");
  await page.goto(base + "/console/");
  assert.equal(await page.locator(`${row(POOL, TARGET)}.drained, ${row(POOL, TARGET)}.overridden, ${row(POOL, TARGET)}.state-open`).count(), 0, "a viewer's action changed the member");
});
