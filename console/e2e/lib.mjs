// What the console's browser tests share: the environment, launching the
// system's Chromium through playwright-core (no browser is downloaded),
// signing in and out, the desktop and phone widths, screenshots, the
// simulator's fault switch, and the checks every page gets (no sideways
// scroll, no error in the page). Every wait is Playwright's or a polled
// condition with a deadline, never a sleep.
import { chromium } from "playwright-core";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

// WAIT is the deadline of every wait: generous, for a busy 2-core machine.
export const WAIT = 25000;

// The widths every page is checked at.
export const DESKTOP = { width: 1500, height: 1000, name: "desktop" };
export const PHONE = { width: 390, height: 844, name: "phone" };

// env is the environment variable k, which the Go test must set.
export function env(k) {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
}

// step prints what the test does next, and when since the start (the Go
// test logs it).
const started = Date.now();
export const step = (s) => console.log(`step: [${((Date.now() - started) / 1000).toFixed(1)}s] ${s}`);

// until polls f until it returns a truthy value, which it returns, or
// throws once deadline ms have passed.
export async function until(what, f, deadline = WAIT, every = 250) {
  const end = Date.now() + deadline;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, every)); // polling a condition, with a deadline
  }
}

// setFault sets a fault of the simulator (SIM_URL) on deployment name.
export async function setFault(sim, name, fault) {
  const r = await fetch(`${sim}/_sim/deployments/${name}/fault`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(fault),
  });
  assert.equal(r.status, 200, `fault ${JSON.stringify(fault)} on ${name}: ${await r.text()}`);
}

// Browser is one Chromium with one page, collecting the page's errors:
// uncaught exceptions and console errors not matched by allow (a
// response's status the test provokes on purpose, as "403").
export class Browser {
  constructor(context, page, profile, allow) {
    this.context = context;
    this.page = page;
    this.profile = profile;
    this.allow = allow;
    this.errors = [];
    page.on("pageerror", (e) => this.errors.push(String(e)));
    page.on("console", (m) => {
      if (m.type() === "error" && !(this.allow && this.allow.test(m.text()))) this.errors.push(`${this.page.url()}: ${m.text()}`);
    });
  }

  // allowing runs f with the console errors matched by re allowed, as
  // the responses of probes the test sends on purpose.
  async allowing(re, f) {
    const was = this.allow;
    this.allow = was ? new RegExp(`${was.source}|${re.source}`) : re;
    try {
      return await f();
    } finally {
      this.allow = was;
    }
  }

  // noErrors fails if the page has had an error since the last call.
  noErrors(what) {
    const errs = this.errors.splice(0);
    assert.deepEqual(errs, [], `errors in the page (${what})`);
  }

  async close() {
    await this.context.close();
    await rm(this.profile, { recursive: true, force: true });
  }
}

// launch starts Chromium (CHROMIUM) headless at the desktop width.
export async function launch({ allow } = {}) {
  const profile = await mkdtemp(join(tmpdir(), "switchover-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env("CHROMIUM"),
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: DESKTOP.width, height: DESKTOP.height },
  });
  context.setDefaultTimeout(WAIT);
  const page = context.pages()[0] ?? (await context.newPage());
  return new Browser(context, page, profile, allow);
}

// run launches the browser, runs test with it, checks that the page had
// no error, prints the line the Go test looks for, and closes the
// browser whatever happened.
export async function run(test, opts) {
  const b = await launch(opts);
  try {
    await test(b);
    b.noErrors("at the end");
    console.log("ok: every browser check passed");
  } finally {
    await b.close();
  }
}

// signIn signs in at base's login page with key and waits for the
// overview.
export async function signIn(page, base, key) {
  if (new URL(page.url(), base).pathname !== "/console/login") await page.goto(base + "/console/login");
  await page.fill("#key", key);
  await Promise.all([page.waitForURL(base + "/console/"), page.click("form#login button[type=submit]")]);
}

// signOut signs out from the nav and waits for the login page.
export async function signOut(page, base) {
  await Promise.all([page.waitForURL(base + "/console/login"), page.click("#logout")]);
}

// clickAndLoad clicks sel, which sends a form, and waits for the page
// its answer loads. Waiting for a URL would not do: an action's answer
// comes back to the address the page is already at, so the wait would
// pass at once and the checks read the page from before the action.
export async function clickAndLoad(page, sel) {
  await page.evaluate(() => { window.__before = true; });
  await page.click(sel);
  await page.waitForFunction(() => window.__before === undefined && document.readyState !== "loading");
}

// atWidth sets the page's viewport to size (DESKTOP or PHONE).
export async function atWidth(page, size) {
  await page.setViewportSize({ width: size.width, height: size.height });
}

// noSideScroll fails if the page itself scrolls sideways: only the
// tables' and charts' own boxes may.
export async function noSideScroll(page, what) {
  const [sw, cw, wide] = await page.evaluate(() => {
    const cw = document.documentElement.clientWidth;
    const sw = document.documentElement.scrollWidth;
    if (sw <= cw) return [sw, cw, []];
    // The innermost elements past the right edge, to say what is at fault.
    const wide = [...document.body.querySelectorAll("*")]
      .filter((el) => el.getBoundingClientRect().right > cw + 1 && ![...el.children].some((c) => c.getBoundingClientRect().right > cw + 1))
      .slice(0, 5).map((el) => `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className ? "." + String(el.className).replace(/ /g, ".") : ""}> ${Math.round(el.getBoundingClientRect().right)}px`);
    return [sw, cw, wide];
  });
  assert.ok(sw <= cw, `${what} scrolls sideways at ${cw}px: ${sw}px wide; past the edge: ${wide.join(", ")}`);
}

// tablesInScrollBoxes fails if a table is not in a box that scrolls
// sideways on its own (at a phone's width the page would).
export async function tablesInScrollBoxes(page, what) {
  const boxes = await page.$$eval("table", (ts) => ts.map((t) => getComputedStyle(t.closest(".scroll") || t).overflowX));
  assert.ok(boxes.every((o) => o === "auto" || o === "scroll"), `${what}: a table outside a scroll box: ${boxes}`);
}

// visible fails unless every selector in sels matches an element that is
// shown: it has a box, is not hidden, and once scrolled to (a cell of a
// wide table may be in its box's hidden part) it is in the window. One
// round trip to the page for all of them.
export async function visible(page, sels, what) {
  const bad = await page.evaluate((sels) => sels.flatMap((sel) => {
    const el = document.querySelector(sel);
    if (!el) return [`nothing matches ${sel}`];
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === "hidden" || st.opacity === "0") return [`${sel} is not shown`];
    if (r.right <= 0 || r.bottom <= 0 || r.left >= innerWidth || r.top >= innerHeight) return [`${sel} cannot be scrolled into the window`];
    return [];
  }), sels);
  assert.deepEqual(bad, [], what);
}

// shot saves a screenshot of the whole page as name in SHOT_DIR, which
// the Go test sets only when the screenshots are to be written
// (SWITCHOVER_UPDATE_SCREENSHOTS=1): nothing asserts a picture, and a
// full-page screenshot is slow on a busy machine.
export async function shot(page, name) {
  const dir = process.env.SHOT_DIR;
  if (dir) await page.screenshot({ path: join(dir, name), fullPage: true });
}

// who is the signed-in person and role the nav shows, as "ada admin".
export async function who(page) {
  return (await page.textContent("#who")).replace(/\s+/g, " ").trim();
}
