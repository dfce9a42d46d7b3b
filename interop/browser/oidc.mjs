// People signing in to the inbox with an OpenID provider, and a quorum of
// two of them approving one call (issue 20): Playwright driving Debian's
// chromium headless through the real sign-in of npm `oidc-provider`
// (oidc_provider.mjs, on 127.0.0.2: another site than the inbox), against
// the real `askgate gateway` with the repository's example upstream.
//
// The config names no [[people]]: `sre` is a group whose members the
// provider names ([inbox.oidc] groups), and write_note needs two of them
// (`quorum = { of = "sre", need = 2 }`). The TypeScript MCP SDK's client
// (no elicitation) calls write_note and waits.
//
// Checks, in order:
// - outsider:        ed (group dev) goes through the provider's sign-in and
//                    is refused by the inbox (403), naming the groups that
//                    may sign in; no session
// - sign-in:         ana goes through the provider's sign-in and lands on
//                    the inbox's list, signed in as ana, the call's ask in it
// - first-approval:  ana approves: the ask stays pending, its page says one
//                    more approval is needed and that ana approved
// - callback-reused: the provider's redirect that signed ana in, opened
//                    again: refused (403), it was used
// - second-approval: bo (groups sre, oncall) signs in in another browser
//                    and approves: the ask is answered by "ana, bo", and the
//                    waiting MCP call completes (the note is on disk)
// - no-script-errors
//
//   node oidc.mjs --askgate BIN --upstream BIN --chromium BIN \
//        --modules NODE_MODULES --oidc-modules NODE_MODULES \
//        --scratch DIR --shots DIR --logs DIR
// Prints `ok NAME` or `FAIL NAME: why` per check, then
// `browser-oidc: N passed, N failed`; exits non-zero when a check failed.

import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Checks, check, freePort, watchScripts, within } from './support.mjs';

const { values: args } = parseArgs({
    options: Object.fromEntries(
        ['askgate', 'upstream', 'chromium', 'modules', 'oidc-modules', 'scratch', 'shots', 'logs'].map(k => [k, { type: 'string' }])
    )
});
for (const [key, value] of Object.entries(args)) if (!value) throw new Error(`--${key} is required`);

const requireFrom = createRequire(join(resolve(args.modules), 'browser.cjs'));
const { chromium } = requireFrom('playwright-core');
const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');

const askgate = resolve(args.askgate);
const scratch = resolve(args.scratch);
const [shots, logs] = [resolve(args.shots), resolve(args.logs)];
const notes = join(scratch, 'oidc-notes');
const storeUrl = `sqlite://${join(scratch, 'oidc.db')}`;
const WAIT_MS = 15_000;
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** `askgate asks show ID --json`. */
function shown(id) {
    return JSON.parse(execFileSync(askgate, ['asks', 'show', id, '--store', storeUrl, '--json'], { encoding: 'utf8', timeout: 30_000 }));
}

const scriptErrors = [];
/** The inbox's pages' script errors (the provider's own pages are not
 * askgate's: they load fonts from a network this machine does not have). */
function watch(page, name) {
    return watchScripts(page, name, scriptErrors, () => new URL(page.url()).hostname === '127.0.0.1');
}

const checks = new Checks('browser-oidc', shots);
const run = (name, body) => checks.run(name, body);
const found = {};
function needs(key, from) {
    check(found[key] !== undefined, `needs ${from}, which failed`);
    return found[key];
}

/** Through the provider's own sign-in as `login`, from the inbox's sign-in
 * page, in a fresh browser context: the page, and the inbox's answer to
 * the provider's redirect back (the callback). */
async function signInWithProvider(browser, base, login) {
    const context = await browser.newContext();
    context.setDefaultTimeout(WAIT_MS);
    const page = watch(await context.newPage(), login);
    checks.page = page;
    await page.goto(`${base}login`);
    await page.click('a[href^="/login/oidc"]');
    await page.waitForSelector('input[name=login]');
    check(new URL(page.url()).hostname === '127.0.0.2', `the sign-in led to ${page.url()}, expected the provider`);
    await page.fill('input[name=login]', login);
    await page.fill('input[name=password]', 'any password');
    const back = page.waitForResponse(r => r.url().startsWith(`${base}login/oidc/callback`));
    await page.click('button[type=submit]');
    // The provider's consent page, the first time.
    await page.waitForLoadState();
    if (new URL(page.url()).hostname === '127.0.0.2') await page.click('button[type=submit]');
    const callback = await within(back, WAIT_MS, `${login}'s way back to the inbox`);
    return { context, page, callback };
}

/** Approve the ask `id` in `page` (its "Run write_note"): the post's status. */
async function approve(page, base, id) {
    await page.goto(`${base}asks/${id}`);
    const [posted] = await Promise.all([
        page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}asks/${id}`),
        page.click('button[name=action][value=accept]')
    ]);
    await page.waitForLoadState();
    return posted.status();
}

async function main() {
    mkdirSync(notes, { recursive: true });
    const [inboxPort, providerPort] = [await freePort('127.0.0.1'), await freePort('127.0.0.2')];
    const base = `http://127.0.0.1:${inboxPort}/`;
    const provider = spawn(process.execPath, [fileURLToPath(new URL('oidc_provider.mjs', import.meta.url)), String(providerPort), resolve(args['oidc-modules']), `${base}login/oidc/callback`], { stdio: ['ignore', 'pipe', 'pipe'] });
    provider.stderr.pipe(createWriteStream(join(logs, 'oidc-provider.log')));
    const ready = new Promise((yes, no) => {
        createInterface({ input: provider.stdout }).on('line', line => line === 'ready' && yes());
        provider.once('exit', code => no(new Error(`the provider exited ${code} (see ${logs}/oidc-provider.log)`)));
    });
    const config = join(scratch, 'oidc.toml');
    writeFileSync(
        config,
        `store = ${JSON.stringify(storeUrl)}
inbox_wait = "60s"

[inbox]
listen = "127.0.0.1:${inboxPort}"

[inbox.oidc]
issuer = "http://127.0.0.2:${providerPort}"
client_id = "askgate-inbox"
client_secret = "askgate-inbox-secret-0123456789abcdef"
scopes = ["profile"]
groups = ["sre", "oncall"]
answers_for = ["*"]

[[upstreams]]
name = "notes"
command = ${JSON.stringify(resolve(args.upstream))}
args = ["--dir", ${JSON.stringify(notes)}]

[[rules]]
server = "notes"
tool = "write_note"
risk = "destructive"

[[approvals]]
server = "notes"
tool = "write_note"
quorum = { of = "sre", need = 2 }
`
    );
    const browser = await chromium.launch({ executablePath: resolve(args.chromium), headless: true, args: CHROMIUM_ARGS });
    const client = new Client({ name: 'askgate-browser-oidc', version: '0' }, { capabilities: {} });
    try {
        await within(ready, WAIT_MS, 'the OpenID provider starting');
        const transport = new StdioClientTransport({
            command: askgate,
            args: ['gateway', '--config', config],
            env: { ...process.env, ASKGATE_LOG: process.env.ASKGATE_LOG ?? 'info', NO_COLOR: '1' },
            stderr: 'pipe'
        });
        transport.stderr.pipe(createWriteStream(join(logs, 'gateway-oidc.log')));
        await client.connect(transport);
        const call = client.callTool({ name: 'write_note', arguments: { name: 'by-two', text: 'written after two yeses' } }, undefined, { timeout: 120_000 });
        call.catch(() => {});

        await run('outsider', async () => {
            const { context, page, callback } = await signInWithProvider(browser, base, 'ed');
            check(callback.status() === 403, `ed's sign-in got ${callback.status()}, expected 403`);
            const said = await page.locator('main').innerText();
            check(said.includes('ed is in none of the groups that may sign in here (sre, oncall)'), `the page says ${JSON.stringify(said)}`);
            const list = await page.goto(base);
            check(new URL(page.url()).pathname === '/login', `after the refusal the list led to ${page.url()} (${list.status()})`);
            await context.close();
        });

        await run('sign-in', async () => {
            const { context, page, callback } = await signInWithProvider(browser, base, 'ana');
            check(callback.status() === 200, `ana's sign-in got ${callback.status()}: ${JSON.stringify(await page.locator('main').innerText())}`);
            found.anaCallback = callback.url();
            await page.waitForURL(base);
            check((await page.textContent('header .who'))?.includes('ana'), 'the header does not say ana is signed in');
            const row = page.locator('#asks tr[data-ask]').filter({ hasText: 'write_note' });
            await row.first().waitFor({ timeout: WAIT_MS });
            found.id = await row.first().getAttribute('data-ask');
            found.ana = { context, page };
            await page.screenshot({ path: join(shots, 'oidc-signed-in.png'), fullPage: true });
        });

        await run('first-approval', async () => {
            const { page } = needs('ana', 'sign-in');
            checks.page = page;
            const id = found.id;
            const status = await approve(page, base, id);
            check(status === 303, `ana's approval got ${status}, expected 303`);
            const section = await page.locator('section.approvals').innerText();
            check(/1 more approval needed/.test(section), `the page says ${JSON.stringify(section)}`);
            check(/ana approved/.test(section), `the page does not say ana approved: ${JSON.stringify(section)}`);
            const yours = await page.locator('p.yours').innerText();
            check(/You approved/.test(yours), `the page does not tell ana her answer is counted: ${JSON.stringify(yours)}`);
            check((await page.locator('form.answer').count()) === 0, 'ana is offered the form again, though her answer is counted');
            check(shown(id).status === 'pending', 'one approval of two settled the ask');
            await page.screenshot({ path: join(shots, 'oidc-one-of-two.png'), fullPage: true });
            found.first = true;
        });

        await run('callback-reused', async () => {
            const { page } = needs('ana', 'sign-in');
            checks.page = page;
            const again = await page.goto(needs('anaCallback', 'sign-in'));
            check(again.status() === 403, `the used callback got ${again.status()}, expected 403`);
            check(/used already/.test(await page.locator('main').innerText()), 'the page does not say the sign-in was used');
        });

        await run('second-approval', async () => {
            needs('first', 'first-approval');
            const { page, callback } = await signInWithProvider(browser, base, 'bo');
            check(callback.status() === 200, `bo's sign-in got ${callback.status()}`);
            await page.waitForURL(base);
            const status = await approve(page, base, found.id);
            check(status === 303, `bo's approval got ${status}, expected 303`);
            const row = shown(found.id);
            check(row.status === 'answered', `after two approvals the ask is ${row.status}`);
            check(row.answered_by === 'ana, bo', `answered by ${JSON.stringify(row.answered_by)}, expected "ana, bo"`);
            const result = await within(call, WAIT_MS, 'the waiting write_note call');
            const said = (result.content ?? []).map(c => c.text ?? '').join('\n');
            check(!result.isError, `the call failed: ${JSON.stringify(said)}`);
            const file = join(notes, 'by-two.txt');
            check(existsSync(file) && readFileSync(file, 'utf8') === 'written after two yeses', `${file} was not written`);
            await page.screenshot({ path: join(shots, 'oidc-settled.png'), fullPage: true });
        });

        await run('no-script-errors', async () => {
            check(scriptErrors.length === 0, `the pages logged: ${scriptErrors.join(' | ')}`);
        });
    } finally {
        await browser.close().catch(() => {});
        await client.close().catch(() => {});
        provider.kill();
    }
}

await checks.main(main);
