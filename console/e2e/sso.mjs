// Browser test of the console's single sign-on, run by
// gateway/console_sso_browser_test.go against a gateway whose admin.sso
// names a test OpenID provider (internal/oidctest) on another site
// (localhost; the console is on 127.0.0.1). Every wait is Playwright's
// or a polled condition with a deadline, never a sleep.
//
// Environment: CONSOLE_URL (the admin listener), ADMIN_KEY, IDP_URL (the
// provider's issuer), IDP_NAME (admin.sso.name), OPERATOR, ADMIN and
// UNMAPPED (the provider's people whose groups map to operator, to admin
// and to nothing), DRAIN_POOL, DRAIN_BACKEND, CHROMIUM.
import { env, step, run, atWidth, noSideScroll, visible, shot, signIn, signOut, who, clickAndLoad, PHONE } from "./lib.mjs";
import assert from "node:assert/strict";

const base = env("CONSOLE_URL");
const idp = env("IDP_URL");
const idpName = env("IDP_NAME");
const operator = env("OPERATOR");
const admin = env("ADMIN");
const unmapped = env("UNMAPPED");
const pool = env("DRAIN_POOL");
const backend = env("DRAIN_BACKEND");
const row = `tr[data-member="${pool}/${backend}"]`;

// 401, 403: the probes the test sends on purpose.
await run(async ({ page, context }) => {
  // No page of the console may hold a token: a JWT begins eyJ.
  const noToken = async (where) => {
    const html = await page.content();
    assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(html) && !html.includes("id_token") && !html.includes("access_token"), `${where} shows a token`);
  };

  // ssoSignIn signs in as person at the provider: the console's button,
  // the provider's page (another site), the person's button there.
  const ssoSignIn = async (person) => {
    await page.goto(base + "/console/login");
    await Promise.all([page.waitForURL((u) => u.href.startsWith(idp + "/authorize?")), page.click("#sso-login")]);
    const auth = new URL(page.url());
    for (const k of ["state", "nonce", "code_challenge"]) assert.ok((auth.searchParams.get(k) ?? "").length >= 32, `no ${k} in the authorization request`);
    assert.equal(auth.searchParams.get("code_challenge_method"), "S256");
    await page.click(`button[name="user"][value="${person}"]`);
  };

  // confirmed clicks the member's action act, confirms, and waits for the
  // result's message.
  const confirmed = async (act) => {
    await page.click(`${row} button[data-act="${act}"]`);
    await page.waitForSelector("dialog#confirm[open]");
    await clickAndLoad(page, "#confirm-ok");
    assert.equal(new URL(page.url()).pathname, "/console/");
    assert.match(await page.textContent("#flash"), new RegExp(`Done: ${act} ${backend}`));
  };

  step("the login page offers the provider, and the key form as break-glass");
  await page.goto(base + "/console/");
  assert.equal(new URL(page.url()).pathname, "/console/login");
  assert.equal((await page.textContent("#sso-login")).trim(), `Sign in with ${idpName}`);
  assert.equal(await page.locator("form#login input#key[type=password]").count(), 1);
  await shot(page, "console-sso-login.png");

  step(`${operator} signs in with ${idpName} and lands on the overview as an operator`);
  await ssoSignIn(operator);
  await page.waitForURL(base + "/console/");
  assert.equal(await who(page), `${operator} operator`);
  const cookies = await context.cookies([base + "/console/", base + "/console/sso/callback"]);
  const session = cookies.find((c) => c.name === "switchover_console");
  assert.ok(session && session.httpOnly && session.sameSite === "Strict", `session cookie ${JSON.stringify(session && { ...session, value: "…" })}`);
  assert.ok(!cookies.some((c) => c.name === "switchover_sso" && c.value !== ""), "the pending sign-in's cookie outlived the sign-in");
  await noToken("the overview");

  step(`the operator drains ${backend} from the page and restores it`);
  await page.waitForSelector(`${row} button[data-act="drain"]`);
  await confirmed("drain");
  await page.waitForSelector(`${row}.drained`);
  await confirmed("restore");
  await page.waitForSelector(`${row}:not(.drained)`);

  step("the operator has no reload and no key forms, and the server refuses them anyway");
  await page.goto(base + "/console/config");
  assert.equal(await page.locator('button[data-act="reload"]').count(), 0, "an operator's config page has the reload button");
  await page.goto(base + "/console/keys");
  assert.equal(await page.locator("form#key-create").count(), 0, "an operator's keys page has the key form");
  const refused = await page.evaluate(async () => {
    const csrf = document.querySelector('meta[name="csrf"]').content;
    const post = (path, body) => fetch(path, {
      method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf }, body,
    }).then((r) => r.status);
    return [await post("/console/actions", "action=reload"), await post("/console/keys/create", "name=evil")];
  });
  assert.deepEqual(refused, [403, 403]);
  await page.goto(base + "/console/events");
  assert.ok(await page.locator('tr.ev[data-kind="console:sign_in"]', { hasText: `${operator} signed in to the console as operator with ${idpName}` }).count() > 0, "no sign-in event under the person's name");
  assert.ok(await page.locator('tr.ev[data-kind="admin:drain"]', { hasText: operator }).count() > 0, "the drain is not the person's");
  await noToken("the events page");
  await signOut(page, base);

  step(`${unmapped}, whose groups map to no role, is refused with a page that says why`);
  await ssoSignIn(unmapped);
  await page.waitForSelector("#login-error");
  assert.match(await page.textContent("#login-error"), new RegExp(`as ${unmapped.replace(".", "\\.")}, but no role of the console is given to you`));
  await shot(page, "console-sso-refused.png");
  await page.goto(base + "/console/");
  assert.equal(new URL(page.url()).pathname, "/console/login", "a refused person has a session");

  step(`${admin} signs in as an admin and gets the key forms`);
  await ssoSignIn(admin);
  await page.waitForURL(base + "/console/");
  assert.equal(await who(page), `${admin} admin`);
  await page.goto(base + "/console/keys");
  assert.equal(await page.locator("form#key-create").count(), 1, "an admin's keys page lacks the key form");
  await signOut(page, base);

  step("the admin key still signs in (break-glass)");
  await signIn(page, base, env("ADMIN_KEY"));
  assert.equal(await who(page), "admin admin");
  await signOut(page, base);

  step("at 390 px the login page with the provider's button does not scroll sideways");
  await atWidth(page, PHONE);
  await noSideScroll(page, "the login page");
  await visible(page, ["#sso-login"], "the provider's button at 390 px");
}, { allow: /401|403|Unauthorized|Forbidden/ });
