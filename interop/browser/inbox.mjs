// The inbox in a real browser (issue 7, "Browser tests"): Playwright
// (`playwright-core`, the library only) driving Debian's chromium headless
// against the inbox the real `askgate gateway` serves, while the TypeScript
// MCP SDK's client waits on a tool call that needs a person.
//
// The gateway has the repository's example upstream (`notes`) behind it.
// The client declares URL-mode elicitation only, so a gated call
// (write_note) is parked in the store and the client is sent the
// ask's signed inbox link; the call waits until a person answers there.
// A richer form (integer 1..5, a choice with hotkeys, a time range in a
// zone) is parked beside it with `askgate ask FORM.json`.
//
// Checks, in order (a check that needs an earlier one's result fails with
// why when that one failed):
// - sign-in:      the operator signs in with the page's form (when that
//                 fails, the browser is signed in over HTTP instead, so the
//                 checks after it still test their own thing)
// - listed-live:  the list page, open before the call, shows the parked ask
//                 without a reload (server-sent events)
// - inline-error: 9 for an integer 1..5: the form again (422), the error
//                 beside the field, naming it; the ask stays pending
// - csrf-missing: a post with the session cookie but no CSRF token: 403,
//                 still pending
// - csrf-wrong:   the same with a forged token: 403, still pending
// - csrf-wrong-form: the page's own form with its token swapped, posted by
//                 the browser: 403 for the token, still pending
// - form-settles: the form answered right (a hotkey picks the choice):
//                 answered, by the operator, via web
// - link-settles: the client's signed link, opened in a browser that is not
//                 signed in, shows the confirmation; accepting it settles
//                 the ask and the waiting MCP call completes (the note is
//                 on disk)
// - link-reused:  the same link again (same browser, and a fresh one): 410
// - sign-out:     the header's Sign out ends the session
// - no-script-errors: no page raised a script error or a CSP violation
//
//   node inbox.mjs --askgate BIN --upstream BIN --chromium BIN \
//        --modules NODE_MODULES --scratch DIR --shots DIR --logs DIR
//
// A check listed in expected-failures.txt beside this file (a known inbox
// bug) must fail: it prints `known NAME: why` and does not fail the run;
// when it passes, it fails the run until it is taken off the list.
// Prints `ok NAME` or `FAIL NAME: why` per check, then
// `browser: N passed, N failed`; exits non-zero when a check failed.
// On a failure the page it was on is saved as FAIL-NAME.png.

import { execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Failed, check, watchScripts, within } from './support.mjs';

const EXPECTED_FAILURES = fileURLToPath(new URL('expected-failures.txt', import.meta.url));

const { values: args } = parseArgs({
    options: {
        askgate: { type: 'string' },
        upstream: { type: 'string' },
        chromium: { type: 'string' },
        modules: { type: 'string' },
        scratch: { type: 'string' },
        shots: { type: 'string' },
        logs: { type: 'string' }
    }
});
for (const required of ['askgate', 'upstream', 'chromium', 'modules', 'scratch', 'shots', 'logs']) {
    if (!args[required]) {
        console.error(
            'usage: node inbox.mjs --askgate BIN --upstream BIN --chromium BIN --modules NODE_MODULES --scratch DIR --shots DIR --logs DIR'
        );
        process.exit(2);
    }
}

const requireFrom = createRequire(join(resolve(args.modules), 'browser.cjs'));
const { chromium } = requireFrom('playwright-core');
const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema } = requireFrom('@modelcontextprotocol/sdk/types.js');

const askgate = resolve(args.askgate);
const scratch = resolve(args.scratch);
const shots = resolve(args.shots);
const logs = resolve(args.logs);
const notes = join(scratch, 'notes');
const storeUrl = `sqlite://${join(scratch, 'askgate.db')}`;
const OPERATOR_TOKEN = 'browser-operator-token-0123456789';
const CHROMIUM_ARGS = [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run'
];
/** How long a step may wait for the page or the gateway. */
const WAIT_MS = 10_000;

/** A promise with its resolve, to be settled from elsewhere. */
function deferred() {
    let resolve;
    let reject;
    const promise = new Promise((yes, no) => {
        resolve = yes;
        reject = no;
    });
    return { promise, resolve, reject };
}

/** `askgate asks show ID --json`: the ask as the store has it. */
function statusOf(id) {
    let text;
    try {
        text = execFileSync(askgate, ['asks', 'show', id, '--store', storeUrl, '--json'], { encoding: 'utf8', timeout: 30_000 });
    } catch (error) {
        throw new Failed(`\`askgate asks show ${id}\` exited ${error.status}: ${String(error.stderr ?? error.message).trim()}`);
    }
    // The stored ask (`status`, `answered_by`, `answered_via`, ...) with
    // the audit entries that name it (`audit`).
    return JSON.parse(text);
}

function pending(id, after) {
    const shown = statusOf(id);
    check(shown.status === 'pending', `after ${after}, ${id} is ${shown.status}, expected still pending`);
}

// ---- the setup: a gateway config, the richer form, the browser, the client

mkdirSync(notes, { recursive: true });
const config = join(scratch, 'askgate.toml');
writeFileSync(
    config,
    `store = ${JSON.stringify(storeUrl)}

[inbox]
listen = "127.0.0.1:0"
token = ${JSON.stringify(OPERATOR_TOKEN)}

[[upstreams]]
name = "notes"
command = ${JSON.stringify(resolve(args.upstream))}
args = ["--dir", ${JSON.stringify(notes)}]

[[rules]]
server = "notes"
tool = "write_note"
risk = "medium_write"
`
);
const formFile = join(scratch, 'deploy.json');
writeFileSync(
    formFile,
    JSON.stringify({
        message: 'Deploy web to production?',
        fields: [
            { id: 'replicas', title: 'Replicas', type: 'integer', minimum: 1, maximum: 5, default: 2 },
            {
                id: 'env',
                title: 'Environment',
                type: 'choice',
                options: [
                    { value: 'staging', label: 'Staging', hotkey: 's' },
                    { value: 'prod', label: 'Production', hotkey: 'p' }
                ]
            },
            { id: 'window', title: 'Window', type: 'time_range', zone: 'Europe/Paris' }
        ]
    })
);

/** What went wrong in the pages' scripts: errors, CSP violations. */
const scriptErrors = [];
function watch(page, name) {
    return watchScripts(page, name, scriptErrors);
}

/** Click the form's `action` button: the status the post was answered
 * with (the page then shows where it led). */
async function submit(page, action) {
    const [posted] = await Promise.all([
        page.waitForResponse(r => r.request().method() === 'POST' && new URL(r.url()).pathname.startsWith('/asks/')),
        page.click(`button[name=action][value=${action}]`)
    ]);
    await page.waitForLoadState();
    return posted.status();
}

/** Why a page refused, in a line (its banner). */
async function banner(page) {
    return (await page.locator('.banner').allInnerTexts()).join(' ').trim();
}

async function shoot(page, name) {
    await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** The MCP client on a freshly spawned gateway: declares URL-mode elicitation only. */
async function connect() {
    const client = new Client({ name: 'askgate-browser', version: '0' }, { capabilities: { elicitation: { url: {} } } });
    const asked = deferred();
    client.setRequestHandler(ElicitRequestSchema, request => {
        asked.resolve(request.params);
        // URL mode: accept means "the person will open it"; the answer is given in the inbox.
        return { action: 'accept' };
    });
    const transport = new StdioClientTransport({
        command: askgate,
        args: ['gateway', '--config', config],
        env: { ...process.env, ASKGATE_LOG: process.env.ASKGATE_LOG ?? 'info', NO_COLOR: '1' },
        stderr: 'pipe'
    });
    const log = createWriteStream(join(logs, 'gateway.log'));
    const base = deferred();
    const stderr = transport.stderr;
    stderr.pipe(log);
    createInterface({ input: stderr }).on('line', line => {
        const found = /^askgate gateway: asks a client cannot show wait in the inbox at (http:\/\/\S+\/)/.exec(line);
        if (found) base.resolve(found[1]);
    });
    await client.connect(transport);
    return { client, asked: asked.promise, base: await within(base.promise, WAIT_MS, 'the gateway saying where its inbox is') };
}

/** Sign in as the operator with the page's form, in `page`. */
async function signIn(page, base) {
    await page.goto(`${base}login`);
    await page.fill('#token', OPERATOR_TOKEN);
    const [posted] = await Promise.all([
        page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}login`),
        page.click('main form button[type=submit]')
    ]);
    await page.waitForLoadState();
    check(posted.status() === 303, `the sign-in got ${posted.status()}: ${JSON.stringify(await banner(page))}`);
    check(page.url() === base, `signed in, the page is ${page.url()}, expected the list`);
    check((await page.textContent('header .who'))?.includes('operator'), 'the header does not say who is signed in');
}

/** Sign `context` in over HTTP, the way tests/inbox.rs does (the form's
 * token, the inbox's Origin): the session cookie lands in the browser. */
async function signInOverHttp(context, base) {
    const form = await context.request.get(`${base}login`);
    const csrf = /name="csrf" value="([^"]*)"/.exec(await form.text())?.[1];
    check(csrf, 'the sign-in page has no CSRF token');
    const signed = await context.request.post(`${base}login`, {
        form: { csrf, token: OPERATOR_TOKEN, next: '/' },
        headers: { Origin: new URL(base).origin },
        maxRedirects: 0
    });
    check(signed.status() === 303, `even over HTTP the sign-in got ${signed.status()}`);
}

/** Park the richer form with `askgate ask`: its id. */
function parkForm(base) {
    const printed = execFileSync(
        askgate,
        [
            'ask',
            formFile,
            '--store',
            storeUrl,
            '--json',
            '--principal',
            'release-bot',
            '--server',
            'ci',
            '--tool',
            'deploy',
            '--risk',
            'high_write',
            '--inbox-url',
            base
        ],
        { encoding: 'utf8', timeout: 30_000 }
    );
    return JSON.parse(printed).id;
}

// ---- the checks

/** The checks known to fail, each with why (expected-failures.txt). */
function expectedFailures() {
    const known = new Map();
    for (const line of readFileSync(EXPECTED_FAILURES, 'utf8').split('\n')) {
        const [entry, ...why] = line.split('#');
        const name = entry.trim();
        if (name) known.set(name, why.join('#').trim());
    }
    return known;
}

const expected = expectedFailures();
const results = { passed: 0, failed: 0, known: 0 };
/** What the checks found, for the checks after them. */
const found = {};
/** The page the running check is on, saved when it fails. */
let onPage = null;

async function run(name, body) {
    onPage = null;
    let why = null;
    try {
        await body();
    } catch (error) {
        why = error instanceof Failed ? error.message : `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
        why = why.split('\n')[0];
        if (onPage) await onPage.screenshot({ path: join(shots, `FAIL-${name}.png`), fullPage: true }).catch(() => {});
    }
    if (expected.has(name)) {
        if (why !== null) {
            results.known++;
            console.log(`known ${name}: ${why} [${expected.get(name)}]`);
            return;
        }
        why = `passes, but is listed in expected-failures.txt (${expected.get(name)}): take it off the list`;
    }
    if (why === null) {
        results.passed++;
        console.log(`ok ${name}`);
    } else {
        results.failed++;
        console.log(`FAIL ${name}: ${why}`);
    }
}

/** A refusal for the CSRF token, not for something else (the Origin). */
function refusedForToken(status, body, what) {
    check(status === 403, `${what} got ${status}, expected 403`);
    const said = body.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ');
    check(/security token/.test(said), `${what} was refused, but not for its token: ${JSON.stringify(said.slice(said.indexOf('Refused'), said.indexOf('Refused') + 160))}`);
}

function needs(key, from) {
    check(found[key] !== undefined, `needs ${from}, which failed`);
    return found[key];
}

async function main() {
    const browser = await chromium.launch({ executablePath: resolve(args.chromium), headless: true, args: CHROMIUM_ARGS });
    let session = null;
    try {
        session = await connect();
        const { client, base } = session;
        const operator = await browser.newContext();
        operator.setDefaultTimeout(WAIT_MS);
        const origin = new URL(base).origin;
        const list = watch(await operator.newPage(), 'operator');

        await run('sign-in', async () => {
            onPage = list;
            await signIn(list, base);
        });
        if (!(await list.locator('header .who').count())) {
            await signInOverHttp(operator, base);
        }

        await run('listed-live', async () => {
            const page = list;
            onPage = page;
            // The table listens for changes once its event stream is open.
            const events = page.waitForResponse(r => r.url() === `${base}events`, { timeout: WAIT_MS });
            await page.goto(base);
            check((await events).status() === 200, 'the page did not open /events');
            check((await page.getAttribute('#asks', 'data-live')) === '1', 'the list is not marked live');
            await page.waitForTimeout(300);
            await page.evaluate(() => {
                window.askgateNotReloaded = true;
            });
            found.call = client.callTool(
                { name: 'write_note', arguments: { name: 'from-browser', text: 'written after a yes in the inbox' } },
                undefined,
                { timeout: 120_000 }
            );
            found.call.catch(() => {});
            const asked = await within(
                Promise.race([session.asked, found.call.then(r => Promise.reject(new Failed(`the call returned before asking: ${JSON.stringify(r)}`)))]),
                WAIT_MS,
                'the URL-mode elicitation'
            );
            check(asked.mode === 'url', `the client was asked in ${asked.mode} mode, expected url`);
            check(asked.url?.startsWith(`${base}asks/`) && asked.url.includes('?link='), `not a signed inbox link: ${asked.url}`);
            const id = new URL(asked.url).pathname.split('/').pop();
            found.link = asked.url;
            found.callAsk = id;
            const row = page.locator(`#asks tr[data-ask="${id}"]`);
            await row.waitFor({ timeout: WAIT_MS });
            const text = await row.innerText();
            check(text.includes('notes / write_note') && text.includes('medium_write'), `the row does not show the server, tool and risk: ${JSON.stringify(text)}`);
            check(await page.evaluate(() => window.askgateNotReloaded === true), 'the page was reloaded');
            await shoot(page, 'list');
        });

        await run('inline-error', async () => {
            const id = parkForm(base);
            found.formAsk = id;
            const page = list;
            onPage = page;
            await page.goto(`${base}asks/${id}`);
            const replicas = page.locator('input[name="f.replicas"]');
            check((await replicas.inputValue()) === '2', 'the default 2 is not filled in');
            await replicas.fill('9');
            const status = await submit(page, 'accept');
            check(status === 422, `the wrong value was answered with ${status}, expected 422: ${JSON.stringify(await banner(page))}`);
            const error = (await page.locator('#err-replicas').innerText()).trim();
            check(error.length > 0, 'no error beside the field');
            check(/replicas/i.test(error), `the error does not name the field: ${JSON.stringify(error)}`);
            check(await page.locator('#err-replicas').isVisible(), 'the error is not visible');
            check((await page.locator('input[name="f.replicas"]').inputValue()) === '9', 'the form does not keep what was typed');
            await shoot(page, 'form-error');
            pending(id, 'a wrong value');
        });

        // A post that should carry the form's fields, right, but not this session's token.
        const rightAnswer = {
            action: 'accept',
            'f.replicas': '3',
            'f.env': 'prod',
            'f.window.from': '2026-12-01T09:00',
            'f.window.to': '2026-12-01T17:00'
        };

        // Posted with the browser's session cookie and the inbox's Origin:
        // only the token is wrong.
        await run('csrf-missing', async () => {
            const id = needs('formAsk', 'inline-error');
            const response = await list.request.post(`${base}asks/${id}`, {
                form: rightAnswer,
                headers: { Origin: origin },
                maxRedirects: 0
            });
            refusedForToken(response.status(), await response.text(), 'a post without the CSRF token');
            pending(id, 'a post without the CSRF token');
        });

        await run('csrf-wrong', async () => {
            const id = needs('formAsk', 'inline-error');
            const response = await list.request.post(`${base}asks/${id}`, {
                form: { ...rightAnswer, csrf: 'forged-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
                headers: { Origin: origin },
                maxRedirects: 0
            });
            refusedForToken(response.status(), await response.text(), 'a post with a forged CSRF token');
            pending(id, 'a post with a forged CSRF token');
        });

        await run('csrf-wrong-form', async () => {
            const id = needs('formAsk', 'inline-error');
            const page = list;
            onPage = page;
            // The page's own form, with its token swapped: the browser posts it.
            await page.goto(`${base}asks/${id}`);
            await fillRight(page);
            await page.locator('form.answer input[name=csrf]').evaluate(input => {
                input.value = 'forged-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
            });
            const status = await submit(page, 'accept');
            refusedForToken(status, await page.content(), "the page's form with a forged token");
            pending(id, "the page's form with a forged CSRF token");
        });

        await run('form-settles', async () => {
            const id = needs('formAsk', 'inline-error');
            const page = list;
            onPage = page;
            await page.goto(`${base}asks/${id}`);
            // The hotkey `p` picks Production (inbox.js), outside any text input.
            await page.locator('h1').click();
            await page.keyboard.press('p');
            check(await page.locator('input[name="f.env"][value="prod"]').isChecked(), 'the hotkey p did not pick Production');
            await fillRight(page, { choice: false });
            const status = await submit(page, 'accept');
            check(status === 303, `the right answer got ${status}, expected 303: ${JSON.stringify(await banner(page))}`);
            const outcome = await page.locator('p.outcome').innerText();
            check(/answered, by operator via web/.test(outcome), `the page says ${JSON.stringify(outcome)}`);
            await shoot(page, 'form-settled');
            const shown = statusOf(id);
            check(shown.status === 'answered' && shown.answered_via === 'web', `the store has ${shown.status} via ${shown.answered_via}`);
        });

        await run('link-settles', async () => {
            const link = needs('link', 'listed-live');
            const id = found.callAsk;
            const stranger = await browser.newContext();
            stranger.setDefaultTimeout(WAIT_MS);
            const page = watch(await stranger.newPage(), 'link');
            onPage = page;
            const opened = await page.goto(link);
            found.stranger = stranger;
            check(opened.status() === 200, `the link opened with ${opened.status()}`);
            check(page.url() === `${base}asks/${id}`, `the link led to ${page.url()}, expected the ask's page`);
            const text = await page.locator('main').innerText();
            check(text.includes('write_note') && text.includes('notes'), 'the confirmation does not show the server and tool');
            // What it runs with, in full: every argument the agent sent.
            const args = await page.locator('section.arguments').innerText().catch(() => '');
            check(args.includes('What it runs with') && args.includes('from-browser') && args.includes('written after a yes in the inbox'),
                `the page does not show the call's arguments: ${JSON.stringify(args)}`);
            const decide = page.locator('button[name=action][value=accept]');
            check((await decide.innerText()).trim().startsWith('Run write_note'), `the decision says ${JSON.stringify(await decide.innerText())}`);
            await shoot(page, 'confirm-form');
            const status = await submit(page, 'accept');
            check(status === 303, `accepting the confirmation got ${status}, expected 303: ${JSON.stringify(await banner(page))}`);
            const outcome = await page.locator('p.outcome').innerText();
            check(/answered/.test(outcome) && /via web/.test(outcome), `the page says ${JSON.stringify(outcome)}`);
            const after = await page.locator('main').innerText();
            // The tree is gone with the sealed arguments; the preview it was
            // asked with stays.
            check(/arguments were erased/.test(after) && await page.locator('section.arguments').count() === 0,
                `the settled page: ${JSON.stringify(after.slice(0, 400))}`);
            await shoot(page, 'settled');
            const result = await within(found.call, WAIT_MS, 'the waiting write_note call');
            const said = (result.content ?? []).map(c => c.text ?? '').join('\n');
            check(!result.isError, `the call failed: ${JSON.stringify(said)}`);
            const file = join(notes, 'from-browser.txt');
            check(existsSync(file) && readFileSync(file, 'utf8') === 'written after a yes in the inbox', `${file} was not written`);
        });

        await run('link-reused', async () => {
            const link = needs('link', 'listed-live');
            const stranger = needs('stranger', 'link-settles');
            const page = watch(await stranger.newPage(), 'link-again');
            onPage = page;
            const again = await page.goto(link);
            check(again.status() === 410, `the used link opened again got ${again.status()}, expected 410`);
            check(/already used/.test(await page.locator('main').innerText()), 'the page does not say the link was used');
            await shoot(page, 'link-reused');
            const fresh = await browser.newContext();
            const other = watch(await fresh.newPage(), 'link-fresh');
            const elsewhere = await other.goto(link);
            check(elsewhere.status() === 410, `the used link in a fresh browser got ${elsewhere.status()}, expected 410`);
            await fresh.close();
        });

        await run('sign-out', async () => {
            const page = list;
            onPage = page;
            await page.goto(base);
            const [posted] = await Promise.all([
                page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}logout`),
                page.click('form.logout button[type=submit]')
            ]);
            await page.waitForLoadState();
            check(posted.status() === 303, `signing out got ${posted.status()}, expected 303: ${JSON.stringify(await banner(page))}`);
            const after = await page.goto(base);
            check(new URL(page.url()).pathname === '/login', `after signing out, the list led to ${page.url()} (${after.status()}), expected the sign-in page`);
        });

        await run('no-script-errors', async () => {
            check(scriptErrors.length === 0, `the pages logged: ${scriptErrors.join(' | ')}`);
        });
    } finally {
        await browser.close().catch(() => {});
        if (session) await session.client.close().catch(() => {});
    }
    if (results.known) console.log(`browser: ${results.known} known failure(s), each an inbox bug listed in ${EXPECTED_FAILURES}`);
    console.log(`browser: ${results.passed} passed, ${results.failed} failed`);
    process.exit(results.failed ? 1 : 0);
}

/** Fill the richer form right: 3 replicas, Production, a window in the field's zone. */
async function fillRight(page, { choice = true } = {}) {
    await page.fill('input[name="f.replicas"]', '3');
    if (choice) await page.check('input[name="f.env"][value="prod"]');
    await page.fill('input[name="f.window.from"]', '2026-12-01T09:00');
    await page.fill('input[name="f.window.to"]', '2026-12-01T17:00');
}

try {
    await main();
} catch (error) {
    // The setup failed (the browser, the gateway): every check is unrun.
    console.log(`FAIL setup: ${error?.message ?? error}`);
    console.log(`browser: ${results.passed} passed, ${results.failed + 1} failed`);
    process.exit(1);
}
